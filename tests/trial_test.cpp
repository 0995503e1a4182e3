// Judging batch_sweep trials from real child processes: what frameworks
// print when memory runs out, exit codes, signals, time limits, and the
// throughput a --metric-regex reads from the output.
#include "harness/measure/trial.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

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

TrialVerdict judge(const std::string& script, const TrialRules& rules = make_trial_rules({}, "")) {
  const ChildResult child = run_shell(script);
  EXPECT_TRUE(child.started) << child.start_error;
  return judge_trial(child, rules);
}

std::string usage_error_of(const std::vector<std::string>& oom, const std::string& metric) {
  try {
    make_trial_rules(oom, metric);
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
  EXPECT_FALSE(v.metric.has_value());
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

TEST_F(TrialTest, EveryBuiltinPatternIsRecognised) {
  ASSERT_FALSE(builtin_oom_patterns().empty());
  for (const std::string& pattern : builtin_oom_patterns()) {
    const TrialVerdict v = judge(print("Error: " + pattern + " (trial)") + "; exit 1");
    EXPECT_EQ(v.status, PointStatus::oom) << pattern;
  }
}

TEST_F(TrialTest, SuccessIsOk) {
  const TrialVerdict v = judge(print("done") + "; exit 0");
  EXPECT_EQ(v.status, PointStatus::ok);
  EXPECT_EQ(v.note, "");
  EXPECT_FALSE(v.metric.has_value());
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
  const TrialRules rules = make_trial_rules({"allocator: [0-9]+ bytes exhausted"}, "");
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
  const TrialRules rules = make_trial_rules({}, "throughput: ([0-9.,]+) samples/s");
  ASSERT_TRUE(rules.metric.has_value());
  const TrialVerdict v = judge(print("throughput: 100.0 samples/s") + "; " + print("throughput: 12,345.5 samples/s") +
                                   "; " + print("done"),
                               rules);
  EXPECT_EQ(v.status, PointStatus::ok);
  ASSERT_TRUE(v.metric.has_value());
  EXPECT_DOUBLE_EQ(*v.metric, 12345.5);
}

TEST_F(TrialTest, MetricWithSeveralMatchesOnOneLine) {
  const TrialRules rules = make_trial_rules({}, "tps=([0-9]+)");
  const TrialVerdict v = judge(print("tps=10 tps=20") + "; " + print("tps=30 tps=40 end"), rules);
  ASSERT_TRUE(v.metric.has_value());
  EXPECT_DOUBLE_EQ(*v.metric, 40);
}

TEST_F(TrialTest, MetricRegexWithoutGroupIsAUsageError) {
  try {
    make_trial_rules({}, "throughput: [0-9.]+");
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
  const TrialRules rules = make_trial_rules({}, "");
  EXPECT_FALSE(rules.metric.has_value());
  EXPECT_EQ(rules.oom_patterns.size(), builtin_oom_patterns().size());
}

TEST_F(TrialTest, MissingMetricIsAnError) {
  const TrialRules rules = make_trial_rules({}, "throughput: ([0-9.]+)");
  const TrialVerdict v = judge(print("finished without printing a rate"), rules);
  EXPECT_EQ(v.status, PointStatus::error);
  EXPECT_FALSE(v.metric.has_value());
  EXPECT_CONTAINS(v.note, "--metric-regex");
}

TEST_F(TrialTest, MetricThatIsNotANumberIsAnError) {
  const TrialRules rules = make_trial_rules({}, "throughput: (\\S+)");
  const TrialVerdict v = judge(print("throughput: fast"), rules);
  EXPECT_EQ(v.status, PointStatus::error);
  EXPECT_FALSE(v.metric.has_value());
  EXPECT_CONTAINS(v.note, "'fast'");
}

TEST_F(TrialTest, FailedRunReportsNoMetric) {
  const TrialRules rules = make_trial_rules({}, "throughput: ([0-9.]+)");
  const TrialVerdict v = judge(print("throughput: 99.5") + "; exit 1", rules);
  EXPECT_EQ(v.status, PointStatus::error);
  EXPECT_FALSE(v.metric.has_value());
}

TEST_F(TrialTest, SigkillIsTakenForTheOomKiller) {
  const TrialVerdict v = judge(print("loading") + "; kill -KILL $$");
  EXPECT_EQ(v.status, PointStatus::oom);
  EXPECT_CONTAINS(v.note, "SIGKILL");
}

TEST_F(TrialTest, OtherSignalIsAnError) {
  const TrialVerdict v = judge(print("about to crash") + "; kill -SEGV $$");
  EXPECT_EQ(v.status, PointStatus::error);
  EXPECT_CONTAINS(v.note, "signal 11");
  EXPECT_CONTAINS(v.note, "about to crash");
}

TEST_F(TrialTest, TimeoutIsATimeout) {
  const ChildResult child = run_shell(print("CUDA out of memory") + "; sleep 30", 0.3);
  ASSERT_TRUE(child.timed_out);
  const TrialVerdict v = judge_trial(child, make_trial_rules({}, ""));
  EXPECT_EQ(v.status, PointStatus::timeout);  // killed by us, whatever it printed
  EXPECT_CONTAINS(v.note, "--timeout");
}

TEST_F(TrialTest, InterruptedIsSkipped) {
  set_interrupted_for_testing(true);
  const ChildResult child = run_shell("sleep 30");
  set_interrupted_for_testing(false);
  ASSERT_TRUE(child.interrupted);
  const TrialVerdict v = judge_trial(child, make_trial_rules({}, ""));
  EXPECT_EQ(v.status, PointStatus::skipped);
  EXPECT_EQ(v.note, "interrupted");
}

TEST_F(TrialTest, CommandThatCannotStartIsAnError) {
  ChildSpec spec;
  spec.argv = {"/nonexistent/train.py"};
  const ChildResult child = run_child(spec);
  ASSERT_FALSE(child.started);
  const TrialVerdict v = judge_trial(child, make_trial_rules({}, ""));
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
