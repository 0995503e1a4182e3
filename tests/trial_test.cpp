// Judging batch_sweep trials from real child processes: what frameworks
// print when memory runs out, exit codes, signals, time limits, and the
// throughput a --metric-regex reads from the output.
#include "harness/measure/trial.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

#include "harness/batch/batch_trials.hpp"
#include "harness/core/child_process.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/usage_error.hpp"
#include "tests/support.hpp"

namespace redline {
namespace {

// Runs `script` under /bin/sh for real.
ChildResult run_shell(const std::string& script, double timeout = 60) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.timeout_seconds = timeout;
  return run_child(spec);
}

// A shell command that prints `text` exactly (no single quotes in it).
std::string print(const std::string& text) { return "printf '%s\\n' '" + text + "'"; }

// Prints `lines` (as arguments: any quotes in them are kept), then exits with `code`.
ChildResult print_and_exit(const std::vector<std::string>& lines, int code) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", "printf '%s\\n' \"$@\"; exit " + std::to_string(code), "sh"};
  spec.argv.insert(spec.argv.end(), lines.begin(), lines.end());
  spec.timeout_seconds = 60;
  return run_child(spec);
}

TrialVerdict judge(const std::string& script, const TrialRules& rules = make_trial_rules({})) {
  const ChildResult child = run_shell(script);
  EXPECT_TRUE(child.started) << child.start_error;
  return judge_trial(child, rules);
}

std::string usage_error_of(const std::vector<std::string>& oom, const std::string& metric) {
  try {
    make_trial_rules(oom, {.metric_regex = metric});
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UsageError";
  return "";
}

class TrialTest : public ::testing::Test {
 protected:
  void TearDown() override { set_interrupted_for_testing(false); }
};

TEST_F(TrialTest, PyTorchOutOfMemory) {
  const std::string line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
  const TrialVerdict v = judge(print("step 1 loss 2.31") + "; " + print(line) + "; " + print("exiting") + "; exit 1");
  EXPECT_EQ(v.status, PointStatus::oom);
  EXPECT_EQ(v.note, line);  // the telling line, not the last one
  EXPECT_FALSE(v.reading.has_value());
}

TEST_F(TrialTest, PyTorchCudaErrorOutOfMemory) {
  const TrialVerdict v = judge(print("RuntimeError: CUDA error: out of memory") + "; exit 1");
  EXPECT_EQ(v.status, PointStatus::oom);
  EXPECT_EQ(v.note, "RuntimeError: CUDA error: out of memory");
}

TEST_F(TrialTest, JaxResourceExhausted) {
  const std::string line =
      "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes.";
  const TrialVerdict v = judge(print("compiling") + "; " + print(line) + "; exit 1");
  EXPECT_EQ(v.status, PointStatus::oom);
  EXPECT_EQ(v.note, line);
}

TEST_F(TrialTest, CudaRuntimeMemoryAllocation) {
  const TrialVerdict v = judge(print("cudaMalloc failed: cudaErrorMemoryAllocation (out of memory)") + "; exit 2");
  EXPECT_EQ(v.status, PointStatus::oom);
  EXPECT_EQ(v.note, "cudaMalloc failed: cudaErrorMemoryAllocation (out of memory)");
}

TEST_F(TrialTest, StdBadAlloc) {
  const TrialVerdict v = judge(
      "printf \"terminate called after throwing an instance of 'std::bad_alloc'\\n  what():  std::bad_alloc\\n\"; "
      "exit 134");
  EXPECT_EQ(v.status, PointStatus::oom);
  EXPECT_EQ(v.note, "terminate called after throwing an instance of 'std::bad_alloc'");
}

// Real lines, as these frameworks print them when memory runs out.
const std::vector<std::string>& framework_oom_lines() {
  static const std::vector<std::string> lines = {
      // PyTorch's CPU allocator, older and newer wording.
      "RuntimeError: [enforce fail at alloc_cpu.cpp:117] err == 0. DefaultCPUAllocator: can't allocate memory: you "
      "tried to allocate 2359296 bytes. Error code 12 (Cannot allocate memory)",
      "RuntimeError: DefaultCPUAllocator: not enough memory: you tried to allocate 37984010240 bytes",
      "[enforce fail at alloc_cpu.cpp:118] data. allocation failed",
      // ROCm builds of PyTorch.
      "RuntimeError: HIP out of memory. Tried to allocate 12 GiB",
      // TensorFlow.
      "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
      "shape[64,160,160,131]",
      // XLA outside JAX's wording.
      "2024-05-01 12:00:00.000000: W external/xla/xla/service/gpu/gpu_executable.cc: RESOURCE_EXHAUSTED: Out of "
      "memory allocating 1073741824 bytes.",
      // Python, and numpy's subclass of MemoryError.
      "MemoryError",
      "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 7.45 GiB for an array with shape (1000, 1000000) "
      "and data type float64",
      // cuBLAS failing to get its workspace.
      "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
      // The ones tested one by one above.
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
      "RuntimeError: CUDA error: out of memory",
      "cudaMalloc failed: cudaErrorMemoryAllocation (out of memory)",
      "terminate called after throwing an instance of 'std::bad_alloc'",
  };
  return lines;
}

TEST_F(TrialTest, EveryFrameworksOutOfMemoryLine) {
  for (const std::string& line : framework_oom_lines()) {
    const TrialVerdict v = judge_trial(print_and_exit({"step 1", line, "exiting"}, 1), make_trial_rules({}));
    EXPECT_EQ(v.status, PointStatus::oom) << line;
    EXPECT_EQ(v.note, line.substr(0, 160) + (line.size() > 160 ? "..." : "")) << line;
  }
}

// No built-in pattern without a real line it is there for.
TEST_F(TrialTest, EveryBuiltinPatternHasItsLine) {
  ASSERT_FALSE(builtin_oom_patterns().empty());
  for (const std::string& pattern : builtin_oom_patterns()) {
    const std::regex re(pattern);
    const auto& lines = framework_oom_lines();
    EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [&](const auto& l) { return std::regex_search(l, re); }))
        << pattern;
  }
}

TEST_F(TrialTest, MemoryErrorMustBeTheWholeName) {
  const TrialVerdict v = judge(print("retrying after 2 MemoryErrors from the cache") + "; " +
                               print("ValueError: bad shape") + "; exit 1");
  EXPECT_EQ(v.status, PointStatus::error);
}

// A wrapper shell whose child the kernel killed exits 128 + 9.
TEST_F(TrialTest, ExitStatus137FromAWrapperIsAnOom) {
  const TrialVerdict v = judge(print("launching worker") + "; sh -c 'kill -KILL $$'; exit $?");
  EXPECT_EQ(v.status, PointStatus::oom);
  EXPECT_EQ(v.note.rfind("exit status 137", 0), 0u) << v.note;
  EXPECT_CONTAINS(v.note, "a SIGKILL passed on");
  EXPECT_EQ(judge("exit 136").status, PointStatus::error);
}

// The counter is the kernel's (batch_sweep_test makes a real one count);
// here a trial that failed quietly while it moved.
TEST_F(TrialTest, AnOomKillCountedInTheCgroupIsAnOom) {
  ChildResult child = run_shell(print("worker 3 exited unexpectedly") + "; exit 1");
  ASSERT_EQ(child.exit_code, 1);
  child.oom_kills = 0;
  EXPECT_EQ(judge_trial(child, make_trial_rules({})).status, PointStatus::error);
  child.oom_kills = 1;
  const TrialVerdict v = judge_trial(child, make_trial_rules({}));
  EXPECT_EQ(v.status, PointStatus::oom);
  EXPECT_CONTAINS(v.note, "OOM killer");
  EXPECT_CONTAINS(v.note, "exit status 1: worker 3 exited unexpectedly");
  // A successful trial is ok whatever else the cgroup saw.
  ChildResult ok = run_shell("exit 0");
  ok.oom_kills = 1;
  EXPECT_EQ(judge_trial(ok, make_trial_rules({})).status, PointStatus::ok);
}

TEST_F(TrialTest, StepTimeIsTheMedianAfterSkippedSteps) {
  const std::string script = print("step 1: loss 9.1, time 900.0 ms") + "; " + print("step 2: loss 8.7, time 12.0 ms") +
                             "; " + print("step 3: loss 8.2, time 10.0 ms") + "; " + print("step 4: loss 7.9, time 11.0 ms");
  TrialVerdict v = judge(script, make_trial_rules({}, {.step_time_regex = "time ([0-9.]+) ms"}));
  EXPECT_EQ(v.status, PointStatus::ok) << v.note;
  ASSERT_TRUE(v.reading.has_value());
  EXPECT_EQ(v.reading->kind, ReadingKind::step_seconds);
  EXPECT_DOUBLE_EQ(v.reading->value, 0.011);  // 900 ms of compilation dropped
  EXPECT_EQ(v.reading->readings, 4);
  EXPECT_EQ(v.reading->skipped, 1);
  EXPECT_EQ(v.reading->source, "--step-time-regex");

  v = judge(script, make_trial_rules({}, {.step_time_regex = "time ([0-9.]+) ms", .skip_steps = 0}));
  EXPECT_DOUBLE_EQ(v.reading->value, 0.0115);
  v = judge(script, make_trial_rules({}, {.step_time_regex = "time ([0-9.]+) ms", .step_time_unit = "us"}));
  EXPECT_DOUBLE_EQ(v.reading->value, 11e-6);
  v = judge(script, make_trial_rules({}, {.step_time_regex = "time ([0-9.]+) ms", .step_time_unit = "s"}));
  EXPECT_DOUBLE_EQ(v.reading->value, 11.0);
  // No more lines than --skip-steps: the last one counts.
  v = judge(script, make_trial_rules({}, {.step_time_regex = "time ([0-9.]+) ms", .skip_steps = 9}));
  EXPECT_DOUBLE_EQ(v.reading->value, 0.011);
  EXPECT_EQ(v.reading->skipped, 3);
}

TEST_F(TrialTest, StepTimeThatIsMissingOrZeroIsAnError) {
  const TrialRules rules = make_trial_rules({}, {.step_time_regex = "time ([0-9.]+) ms"});
  TrialVerdict v = judge(print("done"), rules);
  EXPECT_EQ(v.status, PointStatus::error);
  EXPECT_CONTAINS(v.note, "--step-time-regex matched nothing");
  v = judge(print("time 0.0 ms") + "; " + print("time 0 ms"), rules);
  EXPECT_EQ(v.status, PointStatus::error);
  EXPECT_CONTAINS(v.note, "must be a finite positive number");
  v = judge(print("time 1.2.3 ms"), make_trial_rules({}, {.step_time_regex = "time ([0-9.]+) ms"}));
  EXPECT_EQ(v.status, PointStatus::error);
  EXPECT_CONTAINS(v.note, "'1.2.3'");
}

TEST_F(TrialTest, InfiniteMetricIsAnError) {
  const TrialRules rules = make_trial_rules({}, {.metric_regex = "x=(\\S+)"});
  // A decimal too large for a double reads inf: out of range.
  const TrialVerdict too_large = judge(print("x=1e400"), rules);
  EXPECT_EQ(too_large.status, PointStatus::error);
  EXPECT_FALSE(too_large.reading);
  EXPECT_CONTAINS(too_large.note, "finite positive number");
  // "inf" and "nan" are not decimal numbers at all.
  for (const std::string printed : {"x=inf", "x=-inf", "x=nan"}) {
    const TrialVerdict v = judge(print(printed), rules);
    EXPECT_EQ(v.status, PointStatus::error) << printed;
    EXPECT_FALSE(v.reading) << printed;
    EXPECT_CONTAINS(v.note, "captured '" + printed.substr(2) + "', not a number");
  }
}

TEST_F(TrialTest, StepTimeFlagsAreChecked) {
  auto flag_of = [](const MetricOptions& options) -> std::string {
    try {
      make_trial_rules({}, options);
    } catch (const UsageError& e) {
      return e.flag() + " | " + e.what();
    }
    return "accepted";
  };
  EXPECT_CONTAINS(flag_of({.step_time_regex = "time [0-9.]+ ms"}), "--step-time-regex");
  EXPECT_CONTAINS(flag_of({.step_time_regex = "time [0-9.]+ ms"}), "capture group");
  EXPECT_CONTAINS(flag_of({.step_time_regex = "time ([0-9.]+ ms"}), "not a valid regular expression");
  EXPECT_CONTAINS(flag_of({.metric_regex = "tput ([0-9.]+)", .step_time_regex = "time ([0-9.]+)"}),
                  "--step-time-regex");
  EXPECT_CONTAINS(flag_of({.metric_regex = "tput ([0-9.]+)", .step_time_regex = "time ([0-9.]+)"}), "--metric-regex");
  EXPECT_CONTAINS(flag_of({.step_time_regex = "time ([0-9.]+)", .step_time_unit = "min"}), "--step-time-unit | ");
  EXPECT_CONTAINS(flag_of({.step_time_regex = "time ([0-9.]+)", .step_time_unit = "min"}), "'min'");
  EXPECT_CONTAINS(flag_of({.skip_steps = -1}), "--skip-steps");
  EXPECT_EQ(flag_of({.step_time_regex = "time ([0-9.]+)", .step_time_unit = "us"}), "accepted");
}

// Without a regex, a trainer's own line is read and named.
TEST_F(TrialTest, ATrainersLineIsRecognisedWithoutARegex) {
  const TrialVerdict v = judge(print("iter 0: loss 10.9876, time 3051.20ms, mfu -100.00%") + "; " +
                               print("iter 1: loss 9.1234, time 120.00ms, mfu 12.34%") + "; " +
                               print("iter 2: loss 8.8765, time 124.00ms, mfu 12.10%"));
  EXPECT_EQ(v.status, PointStatus::ok);
  ASSERT_TRUE(v.reading.has_value());
  EXPECT_EQ(v.reading->source, "nanoGPT's iter N: ... time X ms");
  EXPECT_DOUBLE_EQ(v.reading->value, 0.122);
}

TEST_F(TrialTest, SuccessIsOk) {
  const TrialVerdict v = judge(print("done") + "; exit 0");
  EXPECT_EQ(v.status, PointStatus::ok);
  EXPECT_EQ(v.note, "");
  EXPECT_FALSE(v.reading.has_value());
}

TEST_F(TrialTest, OomWordsInASuccessfulRunAreNotAnOom) {
  // It ran to the end: a warning it printed on the way does not fail it.
  const TrialVerdict v = judge(print("warning: RESOURCE_EXHAUSTED on first try, retrying with rematerialization") +
                               "; exit 0");
  EXPECT_EQ(v.status, PointStatus::ok);
}

TEST_F(TrialTest, FailureWithoutAnOomPatternIsAnErrorWithTheLastLine) {
  const TrialVerdict v =
      judge(print("step 1") + "; " + print("ValueError: shapes (3,4) and (5,6) not aligned") + "; echo; echo '  '; exit 2");
  EXPECT_EQ(v.status, PointStatus::error);
  EXPECT_EQ(v.note, "exit status 2: ValueError: shapes (3,4) and (5,6) not aligned");
}

TEST_F(TrialTest, ProgressBarCarriageReturnsEndTheNoteLine) {
  // tqdm redraws its bar with \r; the note is the last redraw, without \r.
  const TrialVerdict v = judge("printf 'train:  10%%|#   |\\rtrain:  20%%|##  |\\rRuntimeError: NCCL timeout\\n'; exit 1");
  EXPECT_EQ(v.status, PointStatus::error);
  EXPECT_EQ(v.note, "exit status 1: RuntimeError: NCCL timeout");
}

TEST_F(TrialTest, FailureWithoutOutput) {
  const TrialVerdict v = judge("exit 3");
  EXPECT_EQ(v.status, PointStatus::error);
  EXPECT_EQ(v.note, "exit status 3");
}

TEST_F(TrialTest, CustomOomRegex) {
  const std::string script = print("allocator: 123456 bytes exhausted on device 0") + "; exit 1";
  EXPECT_EQ(judge(script).status, PointStatus::error);
  const TrialRules rules = make_trial_rules({"allocator: [0-9]+ bytes exhausted"});
  EXPECT_EQ(rules.oom_patterns.size(), builtin_oom_patterns().size() + 1);
  const TrialVerdict v = judge(script, rules);
  EXPECT_EQ(v.status, PointStatus::oom);
  EXPECT_EQ(v.note, "allocator: 123456 bytes exhausted on device 0");
}

TEST_F(TrialTest, BadOomRegexIsAUsageError) {
  const std::string what = usage_error_of({"ok", "(unclosed"}, "");
  EXPECT_CONTAINS(what, "--oom-regex");
  EXPECT_CONTAINS(what, "(unclosed");
}

TEST_F(TrialTest, MetricIsTheFirstGroupOfTheLastMatch) {
  const TrialRules rules = make_trial_rules({}, {.metric_regex = "throughput: ([0-9.,]+) samples/s"});
  ASSERT_TRUE(rules.metric.has_value());
  const TrialVerdict v = judge(print("throughput: 100.0 samples/s") + "; " + print("throughput: 12,345.5 samples/s") +
                                   "; " + print("done"),
                               rules);
  EXPECT_EQ(v.status, PointStatus::ok);
  ASSERT_TRUE(v.reading.has_value());
  EXPECT_DOUBLE_EQ(v.reading->value, 12345.5);
}

TEST_F(TrialTest, MetricWithSeveralMatchesOnOneLine) {
  const TrialRules rules = make_trial_rules({}, {.metric_regex = "tps=([0-9]+)"});
  const TrialVerdict v = judge(print("tps=10 tps=20") + "; " + print("tps=30 tps=40 end"), rules);
  ASSERT_TRUE(v.reading.has_value());
  EXPECT_DOUBLE_EQ(v.reading->value, 40);
}

TEST_F(TrialTest, MetricRegexWithoutGroupIsAUsageError) {
  try {
    make_trial_rules({}, {.metric_regex = "throughput: [0-9.]+"});
    FAIL() << "a metric regex without a group was accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.flag(), "--metric-regex");
    EXPECT_CONTAINS(e.what(), "--metric-regex");
    EXPECT_CONTAINS(e.what(), "throughput: [0-9.]+");
  }
}

TEST_F(TrialTest, BadMetricRegexIsAUsageError) {
  const std::string what = usage_error_of({}, "throughput: ([0-9.]+");
  EXPECT_CONTAINS(what, "--metric-regex");
  EXPECT_CONTAINS(what, "throughput: ([0-9.]+");
}

TEST_F(TrialTest, NoMetricRegexMeansNoMetricRule) {
  const TrialRules rules = make_trial_rules({});
  EXPECT_FALSE(rules.metric.has_value());
  EXPECT_EQ(rules.oom_patterns.size(), builtin_oom_patterns().size());
}

TEST_F(TrialTest, MissingMetricIsAnError) {
  const TrialRules rules = make_trial_rules({}, {.metric_regex = "throughput: ([0-9.]+)"});
  const TrialVerdict v = judge(print("finished without printing a rate"), rules);
  EXPECT_EQ(v.status, PointStatus::error);
  EXPECT_FALSE(v.reading.has_value());
  EXPECT_CONTAINS(v.note, "--metric-regex");
}

TEST_F(TrialTest, MetricThatIsNotANumberIsAnError) {
  const TrialRules rules = make_trial_rules({}, {.metric_regex = "throughput: (\\S+)"});
  const TrialVerdict v = judge(print("throughput: fast"), rules);
  EXPECT_EQ(v.status, PointStatus::error);
  EXPECT_FALSE(v.reading.has_value());
  EXPECT_CONTAINS(v.note, "'fast'");
}

TEST_F(TrialTest, FailedRunReportsNoMetric) {
  const TrialRules rules = make_trial_rules({}, {.metric_regex = "throughput: ([0-9.]+)"});
  const TrialVerdict v = judge(print("throughput: 99.5") + "; exit 1", rules);
  EXPECT_EQ(v.status, PointStatus::error);
  EXPECT_FALSE(v.reading.has_value());
}

TEST_F(TrialTest, SigkillIsTakenForTheOomKiller) {
  const TrialVerdict v = judge(print("loading") + "; kill -KILL $$");
  EXPECT_EQ(v.status, PointStatus::oom);
  EXPECT_EQ(v.note, "killed by SIGKILL (the kernel's OOM killer?): loading");
}

TEST_F(TrialTest, OtherSignalIsAnError) {
  const TrialVerdict v = judge(print("about to crash") + "; kill -SEGV $$");
  EXPECT_EQ(v.status, PointStatus::error);
  EXPECT_CONTAINS(v.note, "signal 11");
  EXPECT_CONTAINS(v.note, "about to crash");
}

// Killed by us: the signal says nothing of memory.
TEST_F(TrialTest, TimeoutIsATimeout) {
  const ChildResult child = run_shell(print("loading") + "; sleep 30", 0.3);
  ASSERT_TRUE(child.timed_out);
  const TrialVerdict v = judge_trial(child, make_trial_rules({}));
  EXPECT_EQ(v.status, PointStatus::timeout);
  EXPECT_CONTAINS(v.note, "--timeout");
}

// A rank out of memory leaves the others waiting in a collective until
// --timeout: what it printed makes the trial out of memory, so the sweep
// bisects below it rather than counting a slow trial.
TEST_F(TrialTest, OutOfMemoryThenAHangIsOutOfMemory) {
  const ChildResult child =
      run_shell(print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB") + "; sleep 30", 0.3);
  ASSERT_TRUE(child.timed_out);
  const TrialVerdict v = judge_trial(child, make_trial_rules({}));
  EXPECT_EQ(v.status, PointStatus::oom);
  EXPECT_CONTAINS(v.note, "CUDA out of memory");
  EXPECT_CONTAINS(v.note, "(then hung until --timeout)");
}

TEST_F(TrialTest, InterruptedIsSkipped) {
  set_interrupted_for_testing(true);
  const ChildResult child = run_shell("sleep 30");
  set_interrupted_for_testing(false);
  ASSERT_TRUE(child.interrupted);
  const TrialVerdict v = judge_trial(child, make_trial_rules({}));
  EXPECT_EQ(v.status, PointStatus::skipped);
  EXPECT_EQ(v.note, "interrupted");
}

TEST_F(TrialTest, CommandThatCannotStartIsAnError) {
  ChildSpec spec;
  spec.argv = {"/nonexistent/train.py"};
  const ChildResult child = run_child(spec);
  ASSERT_FALSE(child.started);
  const TrialVerdict v = judge_trial(child, make_trial_rules({}));
  EXPECT_EQ(v.status, PointStatus::error);
  EXPECT_EQ(v.note.rfind("could not start: ", 0), 0u) << v.note;
  EXPECT_CONTAINS(v.note, "No such file");
}

TEST_F(TrialTest, LongOomLineIsShortened) {
  const std::string line = "CUDA out of memory. " + std::string(300, 'x');
  const TrialVerdict v = judge(print(line) + "; exit 1");
  EXPECT_EQ(v.status, PointStatus::oom);
  EXPECT_EQ(v.note, line.substr(0, 160) + "...");
}

TEST(LastOutputLine, SkipsTrailingBlankLines) {
  EXPECT_EQ(last_output_line("first\nsecond\n\n  \n\t\n"), "second");
  EXPECT_EQ(last_output_line("only"), "only");
  EXPECT_EQ(last_output_line(""), "");
  EXPECT_EQ(last_output_line("\n \n"), "");
  EXPECT_EQ(last_output_line("a\nlast line here\n"), "last line here");
}

TEST(LastOutputLine, LongLinesAreShortened) {
  EXPECT_EQ(last_output_line(std::string(200, 'y')), std::string(160, 'y') + "...");
  EXPECT_EQ(last_output_line("abcdefgh", 4), "abcd...");
  EXPECT_EQ(last_output_line("abcd", 4), "abcd");
}

}  // namespace
}  // namespace redline

// A figure a trial prints beside its throughput (train_step_bench's memory):
// the last match wins, a line without it leaves it unmeasured.
TEST(BatchTrialFigures, LastPrintedNumber) {
  const std::string output = "step 1 peak_bytes: 100\nstep 2 peak_bytes: 2.5e3\nloss 1.0\n";
  EXPECT_EQ(redline::last_printed_number(output, "peak_bytes: ([0-9.eE+-]+)"), 2500.0);
  EXPECT_FALSE(redline::last_printed_number(output, "measured: ([0-9.]+)"));
  EXPECT_FALSE(redline::last_printed_number("x: abc\n", "x: ([a-z]+)"));  // not a number: unmeasured
}
