// batch_sweep's trials end to end, on the real binary and real child
// processes: step times and the lines trainers print, every out-of-memory
// form a framework gives (and the kernel's OOM killer, in a real cgroup),
// peak memory and the search it steers under a real memory limit, and the
// case key that keeps configurations apart.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <optional>
#include <regex>
#include <set>

#include "tests/batch_sweep_run.hpp"

namespace redline::testing {
namespace {

double number(const CsvTable& csv, long batch, const std::string& column) {
  for (std::size_t r = 0; r < csv.rows.size(); ++r)
    if (std::stol(csv.value(r, "batch_size")) == batch && csv.value(r, "repetition") == "0") {
      const std::string text = csv.value(r, column);
      return text.empty() ? NAN : std::stod(text);
    }
  return NAN;
}

TEST_F(BatchSweepTest, StepTimeRegexGivesSamplesPerSecond) {
  // 5 ms per step up to 16, then proportional; a 300 ms first step (compilation) is skipped.
  const std::vector<std::string> train = {"--batch-size", "{bs}", "--log-style", "step-time", "--steps", "3",
                                          "--first-step-ms", "300", "--step-ms", "5", "--saturate-at", "16"};
  auto r = run({"--batch-sizes", "8,16,32,64", "--step-time-regex", "step time ([0-9.]+) ms", "--tokens-per-sample",
                "1024"}, train);
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  CsvTable csv = r.csv();
  EXPECT_NEAR(number(csv, 8, "samples_per_s"), 8 / 0.005, 1e-6);
  EXPECT_NEAR(number(csv, 32, "samples_per_s"), 32 / 0.010, 1e-6);
  EXPECT_NEAR(number(csv, 32, "tokens_per_s"), 32 / 0.010 * 1024, 1e-3);
  // step_time_ms is the printed step time, not the trial's wall time over
  // its steps (which holds the 300 ms first step and the start-up).
  EXPECT_NEAR(number(csv, 8, "step_time_ms"), 5, 1e-9);
  EXPECT_NEAR(number(csv, 32, "step_time_ms"), 10, 1e-9);
  EXPECT_EQ(leading_number(r.say("saturation_batch")), 16) << r.say("saturation_batch");
  EXPECT_CONTAINS(r.say("metric"), "samples_per_s (from --step-time-regex: batch / step time, median of 2 lines after "
                                   "skipping 1)");
  EXPECT_EQ(r.say("metric_warning"), "<missing>");

  // Nothing skipped: the 305 ms step counts in the median of two.
  r = run({"--batch-sizes", "8", "--step-time-regex", "step time ([0-9.]+) ms", "--skip-steps", "0"},
          {"--batch-size", "{bs}", "--log-style", "step-time", "--steps", "2", "--first-step-ms", "300", "--step-ms",
           "5"});
  EXPECT_NEAR(number(r.csv(), 8, "samples_per_s"), 8 / 0.155, 1e-6);
  // The unit: the same number read as seconds.
  r = run({"--batch-sizes", "8", "--step-time-regex", "step time ([0-9.]+) ms", "--step-time-unit", "s"}, train);
  EXPECT_NEAR(number(r.csv(), 8, "samples_per_s"), 8 / 5.0, 1e-9);
}

TEST_F(BatchSweepTest, AMetricRegexGivesTheStepTimeOnlyInSamples) {
  // 4 ms per step at 8, printed as 2000 samples/s: the step is batch / samples/s, not the wall time
  // over --steps (the 100 ms first step and the start-up).
  const std::vector<std::string> train = {"--batch-size", "{bs}", "--steps", "3", "--first-step-ms", "100",
                                          "--step-ms", "4", "--saturate-at", "16"};
  auto r = run({"--batch-sizes", "8", "--steps", "3", "--metric-regex", kMetricRegex}, train);
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  EXPECT_NEAR(number(r.csv(), 8, "step_time_ms"), 4, 4 * 0.005);
  // Another column's figure says nothing of a step: no step time rather than the wall time's.
  r = run({"--batch-sizes", "8", "--steps", "3", "--metric-regex", kMetricRegex, "--metric-name", "images_per_s"},
          train);
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  EXPECT_NEAR(number(r.csv(), 8, "images_per_s"), 2000, 2000 * 0.005);
  EXPECT_TRUE(std::isnan(number(r.csv(), 8, "step_time_ms"))) << number(r.csv(), 8, "step_time_ms");
}

// Each trainer's own line, without a regex: samples/s follows from it and the
// batch, and the summary names where it came from.
TEST_F(BatchSweepTest, TrainersLinesNeedNoRegex) {
  const std::vector<std::pair<std::string, std::string>> styles = {
      {"nanogpt", "nanoGPT's iter N: ... time X ms"},
      {"megatron", "Megatron-LM's elapsed time per iteration (ms)"},
      {"lightning", "Lightning's tqdm bar it/s"},
      {"lightning-rich", "Lightning's rich bar it/s"},
      {"hf", "Hugging Face Trainer's train_samples_per_second"},
      {"deepspeed", "DeepSpeed's CurrSamplesPerSec (samples/sec)"},
      {"torchtitan", "torchtitan's tps (tokens/s)"}};
  for (const auto& [style, name] : styles) {
    SCOPED_TRACE(style);
    const auto r = run({"--batch-sizes", "8,32", "--tokens-per-sample", "1024"},
                       {"--batch-size", "{bs}", "--log-style", style, "--steps", "3", "--first-step-ms", "100",
                        "--step-ms", "4", "--saturate-at", "16", "--seq-len", "1024"});
    ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
    const CsvTable csv = r.csv();
    // The model: 4 ms per step at 8 (2000 samples/s), 8 ms at 32 (4000); printed rounded.
    EXPECT_NEAR(number(csv, 8, "samples_per_s"), 2000, 2000 * 0.005);
    EXPECT_NEAR(number(csv, 32, "samples_per_s"), 4000, 4000 * 0.005);
    // step_time_ms from the same figure (batch / samples/s), not the trial's wall time over its
    // steps, which holds the 100 ms first step and the start-up.
    EXPECT_NEAR(number(csv, 8, "step_time_ms"), 4, 4 * 0.005);
    EXPECT_NEAR(number(csv, 32, "step_time_ms"), 8, 8 * 0.005);
    EXPECT_NEAR(number(csv, 32, "step_time_ms"), 1e3 * 32 / number(csv, 32, "samples_per_s"), 1e-6);
    EXPECT_CONTAINS(r.say("metric"), "from " + name);
    EXPECT_EQ(r.say("metric_warning"), "<missing>");
  }
}

TEST_F(BatchSweepTest, TokensPerSecondIsTheMetricWithoutTokensPerSample) {
  const auto r = run({"--batch-sizes", "8,32"}, {"--batch-size", "{bs}", "--log-style", "torchtitan", "--steps", "2",
                                                 "--step-ms", "4", "--saturate-at", "16", "--seq-len", "512"});
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  const CsvTable csv = r.csv();
  EXPECT_FALSE(csv.column("samples_per_s").has_value()) << "no samples/s without --tokens-per-sample";
  EXPECT_NEAR(number(csv, 8, "tokens_per_s"), 2000 * 512, 1);
  // No samples/s, so no step time follows from the figure; the wall time would hold the start-up.
  EXPECT_TRUE(csv.column("step_time_ms").has_value());
  EXPECT_TRUE(std::isnan(number(csv, 8, "step_time_ms"))) << number(csv, 8, "step_time_ms");
  EXPECT_EQ(r.say("metric").rfind("tokens_per_s (from torchtitan's tps", 0), 0u) << r.say("metric");
  EXPECT_CONTAINS(r.say("best_batch"), "tokens_per_s");
}

TEST_F(BatchSweepTest, WallTimeIsTheLastResortAndSaysSo) {
  const auto r = run({"--batch-sizes", "4,8", "--steps", "2"},
                     {"--batch-size", "{bs}", "--log-style", "none", "--steps", "2", "--step-ms", "2"});
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  EXPECT_CONTAINS(r.say("metric"), "batch x --steps / trial wall time, start-up included");
  EXPECT_CONTAINS(r.say("metric_warning"), "no step time or throughput line was recognised");
  EXPECT_CONTAINS(r.child.output, "batch_sweep: warning: no step time");
}

// One source a sweep: a trial read another way would be compared with
// figures that measure something else (a wall time holds the start-up).
TEST_F(BatchSweepTest, ATrialReadAnotherWayThanTheFirstIsAnError) {
  // nanoGPT's lines up to batch 4, then none: 8 and 16 would fall back on their wall time.
  const std::string lines_up_to_4 =
      "if [ $REDLINE_BATCH_SIZE -le 4 ]; then for i in 1 2 3; do echo \"iter $i: loss 1.0, time 5.00ms\"; done; fi";
  auto r = run_command({"--batch-sizes", "2,4,8,16"}, {"/bin/sh", "-c", lines_up_to_4});
  CsvTable csv = r.csv();
  EXPECT_EQ(statuses(csv), (std::map<long, std::string>{{2, "ok"}, {4, "ok"}, {8, "error"}, {16, "error"}}))
      << r.child.output;
  EXPECT_CONTAINS(csv.value(2, "note"), "its throughput would come from the trial's wall time");
  EXPECT_CONTAINS(csv.value(2, "note"), "the earlier trials' from nanoGPT's iter N: ... time X ms");
  EXPECT_TRUE(csv.value(2, "samples_per_s").empty());
  EXPECT_EQ(r.say("metric"), "samples_per_s (from nanoGPT's iter N: ... time X ms: batch / step time, median of 2 "
                             "lines after skipping 1)");
  EXPECT_EQ(r.say("metric_warning"), "<missing>");

  // The other way: a wall-time sweep does not take a printed figure later.
  const std::string lines_from_8 =
      "if [ $REDLINE_BATCH_SIZE -ge 8 ]; then for i in 1 2 3; do echo \"iter $i: loss 1.0, time 5.00ms\"; done; fi";
  r = run_command({"--batch-sizes", "4,8"}, {"/bin/sh", "-c", lines_from_8});
  csv = r.csv();
  EXPECT_EQ(statuses(csv), (std::map<long, std::string>{{4, "ok"}, {8, "error"}})) << r.child.output;
  EXPECT_CONTAINS(csv.value(1, "note"), "would come from nanoGPT's iter N: ... time X ms, the earlier trials' from "
                                        "the trial's wall time");
  EXPECT_CONTAINS(r.say("metric"), "batch x --steps / trial wall time, start-up included");
}

TEST_F(BatchSweepTest, AMetricRegexThatReadsATimeIsWarnedAbout) {
  auto r = run({"--batch-sizes", "8,16,32", "--metric-regex", "step time ([0-9.]+) ms"},
               {"--batch-size", "{bs}", "--log-style", "step-time", "--step-ms", "2", "--saturate-at", "8"});
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  EXPECT_CONTAINS(r.say("metric_warning"), "looks like a time, not a throughput (it reads a time)");
  // A value that falls with every larger batch, whatever its regex says.
  r = run_command({"--batch-sizes", "1,2,4,8", "--metric-regex", "rate: ([0-9]+)"},
                  {"/bin/sh", "-c", "echo \"rate: $((4096 / REDLINE_BATCH_SIZE))\""});
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  EXPECT_CONTAINS(r.say("metric_warning"), "it fell with every larger batch");
}

// Every out-of-memory form bisects to the exact limit, including a wrapper
// passing on the kernel's SIGKILL as exit status 137.
TEST_F(BatchSweepTest, EveryOutOfMemoryFormBisects) {
  for (const std::string style : {"pytorch", "pytorch-cpu", "hip", "tensorflow", "jax", "python", "cublas", "sigkill",
                                  "exit137"}) {
    SCOPED_TRACE(style);
    const auto r = run({"--max", "256", "--bisect", "--metric-regex", kMetricRegex},
                       {"--batch-size", "{bs}", "--max-fit", "100", "--step-ms", "1", "--oom-style", style});
    ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
    EXPECT_EQ(r.say("max_feasible_batch"), "100 (exact, by bisection)");
    EXPECT_EQ(r.say("first_oom_batch"), "101");
    // The example trainer says its out-of-memory errors are simulated.
    const CsvTable csv = r.csv();
    for (std::size_t row = 0; row < csv.rows.size(); ++row)
      if (csv.value(row, "status") == "oom") EXPECT_CONTAINS(csv.value(row, "note"), "simulat");
  }
  const std::string wrapped = std::string(FAKE_TRAIN_BIN) + " --max-fit 100 --step-ms 1 --oom-style sigkill; exit $?";
  const auto r = run_command({"--max", "256", "--bisect", "--metric-regex", kMetricRegex}, {"/bin/sh", "-c", wrapped});
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  EXPECT_EQ(r.say("max_feasible_batch"), "100 (exact, by bisection)");
  const auto notes = r.csv();
  for (std::size_t row = 0; row < notes.rows.size(); ++row)
    if (notes.value(row, "batch_size") == "101") EXPECT_CONTAINS(notes.value(row, "note"), "exit status 137");
}

// Two errors in a row stop the sweep at 16: nothing above it ran, so the
// summary does not claim "no OOM up to 4096".
TEST_F(BatchSweepTest, FirstOomNamesOnlyBatchesThatRan) {
  const auto r = run({"--max", "4096", "--metric-regex", kMetricRegex},
                     {"--max-fit", "4", "--oom-style", "custom", "--step-ms", "1"});
  EXPECT_EQ(r.say("first_oom_batch"), "none up to 16 (the largest batch that ran)");
  EXPECT_EQ(r.say("stopped"), "2 failures in a row");
}

// The case, under a real memory limit (prlimit --as) and real
// allocations of 256 KiB per sample (each its own mapping: 260 KiB with
// malloc's header page): the limit near 774 is found exactly in at most
// log2(4096) + 3 = 15 trials, from the peak memory of the trials.
TEST_F(BatchSweepTest, PeakMemoryPredictsTheLimitAndTheSearchUsesIt) {
  const auto prlimit = find_executable("prlimit");
  if (!prlimit) GTEST_SKIP() << "prlimit (util-linux) is not installed";
  const std::vector<std::string> train = {"--mem-fixed", "8388608", "--mem-per-sample", "262144", "--max-fit",
                                          "1000000", "--step-ms", "1", "--log-style", "throughput"};
  const double per_sample = 262144 + 4096;
  // The limit: what batch 1 takes, plus room for 773.5 more samples.
  ChildSpec probe;
  probe.argv = {FAKE_TRAIN_BIN, "--batch-size", "1", "--report-vm", "1"};
  probe.argv.insert(probe.argv.end(), train.begin(), train.end());
  const ChildResult one = run_child(probe);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(one.output, m, std::regex("VmPeak:\\s+([0-9]+) kB"))) << one.output;
  const long limit = std::stol(m[1]) * 1024 + static_cast<long>(773.5 * per_sample);

  std::vector<std::string> command = {*prlimit, "--as=" + std::to_string(limit), FAKE_TRAIN_BIN, "--batch-size", "{bs}"};
  command.insert(command.end(), train.begin(), train.end());
  const auto r = run_command({"--max", "4096", "--bisect", "--metric-regex", kMetricRegex}, command);
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  const long found = leading_number(r.say("max_feasible_batch"));
  EXPECT_CONTAINS(r.say("max_feasible_batch"), "(exact, by bisection)");
  EXPECT_GE(found, 768);
  EXPECT_LE(found, 780);
  const CsvTable csv = r.csv();
  int trials = 0;
  for (std::size_t row = 0; row < csv.rows.size(); ++row) trials += csv.value(row, "status") != "skipped";
  EXPECT_LE(trials, 15) << r.child.output;
  EXPECT_LE(std::abs(leading_number(r.say("predicted_max_batch")) - found), 2) << r.say("predicted_max_batch");
  EXPECT_CONTAINS(r.say("predicted_max_batch"), "the bisection began there");
  EXPECT_EQ(csv.value(0, "program"), "fake_train") << "the program prlimit runs names the case";
  // The fit: 260 KiB per sample; the fixed part: the 8 MiB model and the program.
  EXPECT_NEAR(std::stod(r.say("memory_fit")), 260, 260 * 0.01) << r.say("memory_fit");
  EXPECT_CONTAINS(r.say("memory_fit"), "K per sample + ");
  const double measured = (number(csv, 512, "peak_rss_MiB") - number(csv, 256, "peak_rss_MiB")) * 1048576 / 256;
  EXPECT_NEAR(measured, per_sample, per_sample * 0.01);
  EXPECT_GE(number(csv, 1, "peak_rss_MiB"), 8.0);
  // The OOM rows keep the memory they reached.
  EXPECT_GT(number(csv, 1024, "peak_rss_MiB"), number(csv, 512, "peak_rss_MiB"));
  EXPECT_CONTAINS(r.say("gpu_memory"), "not measured");
}

// The kernel's OOM killer ends the trial's worker; the trial itself (a
// wrapper) exits 1 with no OOM message. Only the cgroup's oom_kill count
// tells: the trial is oom, and the limit is found by bisection.
TEST_F(BatchSweepTest, AnOomKillInTheCgroupIsAnOom) {
  std::ifstream self("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(self, line))
    if (line.find(":memory:") != std::string::npos) path = line.substr(line.find(":memory:") + 8);
  const fs::path cgroup = "/sys/fs/cgroup/memory" + path + "/redline_test_" + std::to_string(getpid());
  std::error_code ec;
  if (path.empty() || !fs::create_directory(cgroup, ec))
    GTEST_SKIP() << "cannot make a cgroup v1 memory cgroup here (" << (path.empty() ? "no memory controller" : ec.message())
                 << ")";
  std::ofstream(cgroup / "memory.limit_in_bytes") << (160 << 20);
  // The worker takes REDLINE_BATCH_SIZE MiB: 64 fits, 256 is killed.
  const std::string worker = "python3 -c 'import os; x = bytearray(b\"x\") * (int(os.environ[\"REDLINE_BATCH_SIZE\"]) << 20)'"
                             " || { echo worker failed; exit 1; }";
  const std::string sweep = std::string(BATCH_SWEEP_BIN) + " --batch-sizes 32,64,256 --csv " + (dir_ / "out.csv").string() +
                            " -- /bin/sh -c '" + std::regex_replace(worker, std::regex("'"), "'\\''") + "'";
  ChildSpec spec;
  // The OOM killer takes the largest process of the cgroup: the worker.
  spec.argv = {"/bin/sh", "-c", "echo $$ > " + (cgroup / "cgroup.procs").string() + " && exec " + sweep};
  spec.timeout_seconds = 120;
  const ChildResult child = run_child(spec);
  fs::remove(cgroup, ec);
  ASSERT_EQ(child.exit_code, 0) << child.output;
  const CsvTable csv = read_csv(dir_ / "out.csv");
  EXPECT_EQ(statuses(csv), (std::map<long, std::string>{{32, "ok"}, {64, "ok"}, {256, "oom"}}));
  for (std::size_t row = 0; row < csv.rows.size(); ++row)
    if (csv.value(row, "batch_size") == "256") {
      EXPECT_CONTAINS(csv.value(row, "note"), "cgroup oom_kill");
      EXPECT_CONTAINS(csv.value(row, "note"), "worker failed");
    }
}

// Two configurations of the same command never share a case key; the same
// one always does, whatever does not change the figure (repeats, timeout).
TEST_F(BatchSweepTest, TheCaseKeyHoldsWhatChangesTheFigure) {
  auto config_of = [&](std::vector<std::string> flags, const std::string& step_ms) {
    flags.insert(flags.end(), {"--batch-sizes", "4", "--metric-regex", kMetricRegex});
    const auto r = run(flags, {"--batch-size", "{bs}", "--step-ms", step_ms});
    EXPECT_EQ(r.child.exit_code, 0) << r.child.output;
    const CsvTable csv = r.csv();
    EXPECT_EQ(csv.value(0, "program"), "fake_train");
    return csv.value(0, "config");
  };
  const std::string base = config_of({}, "2");
  EXPECT_EQ(config_of({}, "2"), base);
  EXPECT_EQ(config_of({"--repeats", "2", "--timeout", "60"}, "2"), base);
  std::set<std::string> configs = {base, config_of({}, "5"), config_of({"--steps", "2"}, "2"),
                                   config_of({"--metric-name", "images_per_s"}, "2"),
                                   config_of({"--tokens-per-sample", "128"}, "2")};
  EXPECT_EQ(configs.size(), 5u) << "each of these changes the figure";

  // The same program from another folder (another checkout, build folder or
  // machine) is the same configuration.
  fs::create_directories(dir_ / "elsewhere");
  fs::copy_file(FAKE_TRAIN_BIN, dir_ / "elsewhere" / "fake_train");
  const auto moved = run_command({"--batch-sizes", "4", "--metric-regex", kMetricRegex},
                                 {(dir_ / "elsewhere" / "fake_train").string(), "--batch-size", "{bs}", "--step-ms", "2"});
  ASSERT_EQ(moved.child.exit_code, 0) << moved.child.output;
  EXPECT_EQ(moved.csv().value(0, "config"), base);
}

TEST_F(BatchSweepTest, TheNewFlagsRejectBadInput) {
  const std::string train = FAKE_TRAIN_BIN;
  const std::vector<std::vector<std::string>> cases = {
      {"--step-time-regex", "time [0-9]+", "--", train},
      {"--step-time-unit", "min", "--", train},
      {"--skip-steps", "-1", "--", train},
      {"--tokens-per-sample", "0", "--", train},
      {"--metric-name", "tokens_per_s", "--", train},
      {"--metric-regex", "t ([0-9]+)", "--step-time-regex", "s ([0-9]+)", "--", train},
  };
  for (const auto& args : cases) {
    SCOPED_TRACE(args[0]);
    const std::string out = expect_usage_error(args);
    EXPECT_CONTAINS(out, args[0] == "--metric-regex" ? "--step-time-regex" : args[0]);
    EXPECT_CONTAINS(out, args[0] == "--metric-regex" ? "s ([0-9]+)" : args[1]);
  }
}

}  // namespace
}  // namespace redline::testing
