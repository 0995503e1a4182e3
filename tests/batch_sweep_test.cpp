// Integration tests: the real batch_sweep binary sweeping the real fake_train
// program (tests/fake_train.cpp), each trial a real child process, results
// read back from the real CSV and JSON files it writes.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <tuple>

#include "harness/core/child_process.hpp"
#include "harness/report/csv_reader.hpp"
#include "tests/batch_sweep_run.hpp"
#include "tests/support.hpp"

namespace redline::testing {
namespace {

TEST_F(BatchSweepTest, FindsMaxAndSaturationFromTheMetricRegex) {
  const auto r = run({"--start", "1", "--max", "1024", "--metric-regex", kMetricRegex},
                     {"--saturate-at", "32", "--max-fit", "100", "--step-ms", "5"});
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  EXPECT_EQ(r.say("max_feasible_batch"), "64");
  EXPECT_EQ(r.say("first_oom_batch"), "128");
  EXPECT_EQ(r.say("saturation_batch").rfind("32 (", 0), 0u) << r.say("saturation_batch");
  EXPECT_EQ(r.say("recommended_batch"), "32 (the saturation batch)");
  EXPECT_EQ(r.say("batch_at_90pct_of_best").rfind("32 (", 0), 0u);

  const CsvTable csv = r.csv();
  const std::vector<std::string> common = {"run_id", "timestamp_utc", "host", "gpu", "tool", "case_key", "repetition"};
  for (std::size_t i = 0; i < common.size(); ++i) EXPECT_EQ(csv.header.at(i), common[i]);
  EXPECT_TRUE(csv.column("samples_per_s") && csv.column("step_time_ms") && csv.column("gain_pct"));
  const auto s = statuses(csv);
  const std::map<long, std::string> expected = {{1, "ok"},       {2, "ok"},       {4, "ok"},      {8, "ok"},
                                                {16, "ok"},      {32, "ok"},      {64, "ok"},     {128, "oom"},
                                                {256, "skipped"}, {512, "skipped"}, {1024, "skipped"}};
  EXPECT_EQ(s, expected);
  const std::string config = csv.value(0, "config");
  EXPECT_TRUE(std::regex_match(config, std::regex("[0-9a-f]{8}"))) << config;
  for (std::size_t row = 0; row < csv.rows.size(); ++row) {
    EXPECT_EQ(csv.value(row, "tool"), "batch_sweep");
    EXPECT_EQ(csv.value(row, "case_key"),
              "batch_size=" + csv.value(row, "batch_size") + ";program=fake_train;config=" + config);
    const long bs = std::stol(csv.value(row, "batch_size"));
    if (bs == 128) EXPECT_CONTAINS(csv.value(row, "note"), "CUDA out of memory (simulated)");
    if (bs == 16) {
      // Model: 5 ms per step up to 32 -> 16 / 0.005 = 3200 samples/s, +100% over batch 8.
      EXPECT_NEAR(std::stod(csv.value(row, "samples_per_s")), 3200.0, 0.01);
      EXPECT_NEAR(std::stod(csv.value(row, "gain_pct")), 100.0, 0.01);
    }
    if (bs == 64) EXPECT_NEAR(std::stod(csv.value(row, "gain_pct")), 0.0, 0.01);
  }
  // JSON in Google Benchmark's shape, with the summary recorded.
  std::ifstream json(r.json_path);
  std::stringstream text;
  text << json.rdbuf();
  EXPECT_CONTAINS(text.str(), "\"benchmarks\"");
  EXPECT_CONTAINS(text.str(), "\"name\": \"batch_sweep/batch_size=32/program=fake_train/config=" + config + "\"");
  EXPECT_CONTAINS(text.str(), "\"recommended_batch\": \"32 (the saturation batch)\"");
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_NOT_CONTAINS(entry.path().string(), ".tmp.");  // no temporary file left over
}

TEST_F(BatchSweepTest, BisectFindsTheExactMaximum) {
  const auto r = run({"--max", "1024", "--bisect", "--metric-regex", kMetricRegex},
                     {"--saturate-at", "32", "--max-fit", "100", "--step-ms", "1"});
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  EXPECT_EQ(r.say("max_feasible_batch"), "100 (exact, by bisection)");
  EXPECT_EQ(r.say("first_oom_batch"), "101");
  const auto s = statuses(r.csv());
  EXPECT_EQ(s.at(100), "ok");
  EXPECT_EQ(s.at(101), "oom");
}

TEST_F(BatchSweepTest, SafetyMarginCapsTheRecommendation) {
  // Saturation at 256 is above what fits (100): the safe maximum wins.
  const auto r = run({"--max", "1024", "--bisect", "--safety-margin", "10", "--metric-regex", kMetricRegex},
                     {"--saturate-at", "256", "--max-fit", "100", "--step-ms", "1"});
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  EXPECT_EQ(r.say("safe_max_batch").rfind("90 ", 0), 0u) << r.say("safe_max_batch");
  EXPECT_EQ(r.say("recommended_batch"), "90 (the safe maximum)");
  EXPECT_EQ(r.say("saturation_batch").rfind("not reached", 0), 0u);
}

TEST_F(BatchSweepTest, WallTimeThroughputAndTheBatchSizeVariable) {
  // No {bs} in the arguments: fake_train reads REDLINE_BATCH_SIZE.
  const auto r = run({"--max", "256", "--steps", "4"},
                     {"--saturate-at", "16", "--max-fit", "64", "--step-ms", "25", "--steps", "4"});
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  EXPECT_EQ(r.say("max_feasible_batch"), "64");
  const CsvTable csv = r.csv();
  for (std::size_t row = 0; row < csv.rows.size(); ++row) {
    if (csv.value(row, "status") != "ok") continue;
    const double bs = std::stod(csv.value(row, "batch_size"));
    const double trial_s = std::stod(csv.value(row, "trial_time_s"));
    // samples/s is batch x steps over the trial's wall time, as documented.
    EXPECT_NEAR(std::stod(csv.value(row, "samples_per_s")), bs * 4 / trial_s, 1e-6 * bs * 4 / trial_s);
    EXPECT_NEAR(std::stod(csv.value(row, "step_time_ms")), trial_s * 1000 / 4, 1e-6 * trial_s * 1000);
  }
}

TEST_F(BatchSweepTest, PlaceholderAndRepeatsGiveOneRowPerTrial) {
  const auto r = run({"--batch-sizes", "4,8,16", "--repeats", "3", "--metric-regex", kMetricRegex},
                     {"--batch-size", "{bs}", "--saturate-at", "8", "--max-fit", "100", "--step-ms", "1"});
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  const CsvTable csv = r.csv();
  ASSERT_EQ(csv.rows.size(), 9u);
  std::map<std::string, int> per_key;
  for (std::size_t row = 0; row < csv.rows.size(); ++row) ++per_key[csv.value(row, "case_key")];
  const std::string tail = ";program=fake_train;config=" + csv.value(0, "config");
  EXPECT_EQ(per_key, (std::map<std::string, int>{
                         {"batch_size=4" + tail, 3}, {"batch_size=8" + tail, 3}, {"batch_size=16" + tail, 3}}));
  EXPECT_EQ(r.say("saturation_batch").rfind("8 (", 0), 0u) << r.say("saturation_batch");
}

TEST_F(BatchSweepTest, TooNoisyRepeatsRecommendFromTheFractionRule) {
  // Each trial's throughput is off by up to +-30%: the repeats spread far
  // more than the 5% plateau gain, so no plateau is placed and the
  // recommendation is the first batch at 90% of the best median.
  // Six sizes on the flat part (32..1024), so the best median is seldom the first at 90% of it.
  const auto r = run({"--max", "1024", "--repeats", "3", "--metric-regex", kMetricRegex},
                     {"--saturate-at", "32", "--max-fit", "1000", "--step-ms", "1", "--noise-pct", "30"});
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  EXPECT_EQ(r.say("saturation_batch").rfind("none: too noisy to place a plateau: the repeats spread ", 0), 0u)
      << r.say("saturation_batch");
  EXPECT_CONTAINS(r.say("repeat_spread"), "(median over batch sizes of (max - min) / median of the repeats; widest ");
  const std::string fraction = r.say("batch_at_90pct_of_best");
  EXPECT_EQ(r.say("recommended_batch"), fraction.substr(0, fraction.find(' ')) +
                                            " (the first batch at 90% of the best: too noisy to place a plateau)");
}

TEST_F(BatchSweepTest, RepeatsWithoutNoiseReportTheirSpread) {
  const auto r = run({"--batch-sizes", "8,16,32,64", "--repeats", "2", "--metric-regex", kMetricRegex},
                     {"--batch-size", "{bs}", "--saturate-at", "16", "--max-fit", "100", "--step-ms", "1"});
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  EXPECT_EQ(r.say("repeat_spread").rfind("0% (", 0), 0u) << r.say("repeat_spread");
  EXPECT_EQ(r.say("saturation_batch").rfind("16 (16000 samples_per_s): no larger batch gains more than 5%", 0), 0u)
      << r.say("saturation_batch");
}

TEST_F(BatchSweepTest, PlansGradientAccumulation) {
  const auto exact = run({"--max", "64", "--global-batch", "1024", "--data-parallel", "8", "--metric-regex", kMetricRegex},
                         {"--saturate-at", "32", "--max-fit", "100", "--step-ms", "1"});
  ASSERT_EQ(exact.child.exit_code, 0) << exact.child.output;
  EXPECT_EQ(exact.say("gradient_accumulation"), "GBS 1024 = MBS 32 x GA 4 x DP 8");

  const auto rounded = run({"--max", "64", "--global-batch", "1000", "--data-parallel", "8", "--metric-regex", kMetricRegex},
                           {"--saturate-at", "32", "--max-fit", "100", "--step-ms", "1"});
  ASSERT_EQ(rounded.child.exit_code, 0) << rounded.child.output;
  // 125 per rank: exactly 25 x 5; micro-batches of 32 take 4 steps to 992 or 1024.
  EXPECT_EQ(rounded.say("gradient_accumulation"),
            "GBS 1000 = MBS 25 x GA 5 x DP 8; in 4 steps (MBS up to 32): GBS 992 = MBS 31 x GA 4 x DP 8 (-0.8%) or "
            "GBS 1024 = MBS 32 x GA 4 x DP 8 (+2.4%)");

  // The case: 100 on 3 ranks has no whole plan; the nearest achievable, never MBS above GBS / DP.
  const auto nearest = run({"--max", "64", "--global-batch", "100", "--data-parallel", "3", "--metric-regex", kMetricRegex},
                           {"--saturate-at", "32", "--max-fit", "100", "--step-ms", "1"});
  ASSERT_EQ(nearest.child.exit_code, 0) << nearest.child.output;
  EXPECT_EQ(nearest.say("gradient_accumulation"),
            "no whole plan gives GBS 100 (not a multiple of DP 3); nearest: GBS 99 = MBS 11 x GA 3 x DP 3 (-1.0%) or "
            "GBS 102 = MBS 17 x GA 2 x DP 3 (+2.0%)");

  // With batch 16 recommended, 102 is only MBS 2 x GA 17: the nearest plans take at most one step more
  // than the 3 that micro-batches of 16 need.
  const auto sixteen = run({"--max", "64", "--global-batch", "100", "--data-parallel", "3", "--metric-regex",
                            kMetricRegex}, {"--saturate-at", "16", "--max-fit", "100", "--step-ms", "1"});
  ASSERT_EQ(sixteen.child.exit_code, 0) << sixteen.child.output;
  ASSERT_EQ(leading_number(sixteen.say("recommended_batch")), 16) << sixteen.say("recommended_batch");
  const std::string plan = sixteen.say("gradient_accumulation");
  EXPECT_EQ(plan, "no whole plan gives GBS 100 (not a multiple of DP 3); nearest: GBS 99 = MBS 11 x GA 3 x DP 3 "
                  "(-1.0%) or GBS 108 = MBS 12 x GA 3 x DP 3 (+8.0%)");
  const std::regex ga("GA ([0-9]+)");
  for (auto it = std::sregex_iterator(plan.begin(), plan.end(), ga); it != std::sregex_iterator(); ++it)
    EXPECT_LE(std::stoi((*it)[1]), 4) << plan;
}

TEST_F(BatchSweepTest, JaxAndCustomOomMessages) {
  const auto jax = run({"--max", "16", "--metric-regex", kMetricRegex}, {"--max-fit", "4", "--oom-style", "jax", "--step-ms", "1"});
  EXPECT_EQ(statuses(jax.csv()).at(8), "oom");

  // An OOM message no built-in pattern knows is an error...
  const auto unknown = run({"--max", "16", "--metric-regex", kMetricRegex},
                           {"--max-fit", "4", "--oom-style", "custom", "--step-ms", "1"});
  EXPECT_EQ(statuses(unknown.csv()).at(8), "error");
  // ...until --oom-regex names it.
  const auto custom = run({"--max", "16", "--oom-regex", "arena exhausted", "--metric-regex", kMetricRegex},
                          {"--max-fit", "4", "--oom-style", "custom", "--step-ms", "1"});
  EXPECT_EQ(statuses(custom.csv()).at(8), "oom");
  EXPECT_EQ(custom.say("max_feasible_batch"), "4");
}

TEST_F(BatchSweepTest, HangingTrialIsKilledAtTheTimeout) {
  const auto r = run({"--max", "64", "--timeout", "1", "--metric-regex", kMetricRegex},
                     {"--hang-above", "4", "--step-ms", "1"});
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;  // batches 1..4 ran ok
  const auto s = statuses(r.csv());
  EXPECT_EQ(s.at(4), "ok");
  EXPECT_EQ(s.at(8), "timeout");
  EXPECT_EQ(s.at(16), "timeout");
  EXPECT_EQ(s.at(32), "skipped");  // two failures in a row stop the sweep
  EXPECT_EQ(r.say("stopped"), "2 failures in a row");
  EXPECT_EQ(r.say("max_feasible_batch"), "4");
}

TEST_F(BatchSweepTest, ZeroThroughputIsAnErrorNotAResult) {
  const auto r = run({"--max", "4", "--metric-regex", kMetricRegex}, {"--throughput-scale", "0", "--step-ms", "1"});
  EXPECT_EQ(r.child.exit_code, 1) << r.child.output;
  const CsvTable csv = r.csv();
  for (std::size_t row = 0; row < csv.rows.size(); ++row) {
    if (csv.value(row, "status") == "skipped") continue;
    EXPECT_EQ(csv.value(row, "status"), "error");
    EXPECT_EQ(csv.value(row, "samples_per_s"), "");  // nothing measured: an empty cell, never 0
    EXPECT_CONTAINS(csv.value(row, "note"), "must be a finite positive number");
  }
}

// An infinite throughput is no measurement: as printed (inf, 1e400) or computed from a step time
// so short that batch / step time overflows (1e-320 ms).
TEST_F(BatchSweepTest, InfiniteThroughputIsAnErrorNotAResult) {
  // A decimal too large for a double (or a step time too small for its
  // rate) is out of range; "inf" is no decimal number at all.
  const std::vector<std::tuple<std::vector<std::string>, std::string, std::string>> cases = {
      {{"--metric-regex", "x=(\\S+)"}, "echo x=inf", "captured 'inf', not a number"},
      {{"--metric-regex", "x=(\\S+)"}, "echo x=1e400", "finite positive number"},
      {{"--step-time-regex", "t=(\\S+)", "--skip-steps", "0"}, "echo t=1e-320", "finite positive number"},
  };
  for (const auto& [metric_flags, script, why] : cases) {
    std::vector<std::string> flags = {"--batch-sizes", "1,2"};
    flags.insert(flags.end(), metric_flags.begin(), metric_flags.end());
    const auto r = run_command(flags, {"sh", "-c", script});
    EXPECT_EQ(r.child.exit_code, 1) << script << "\n" << r.child.output;
    const CsvTable csv = r.csv();
    ASSERT_FALSE(csv.rows.empty()) << script;
    for (std::size_t row = 0; row < csv.rows.size(); ++row) {
      if (csv.value(row, "status") == "skipped") continue;
      EXPECT_EQ(csv.value(row, "status"), "error") << script;
      EXPECT_EQ(csv.value(row, "samples_per_s"), "") << script;
      EXPECT_CONTAINS(csv.value(row, "note"), why);
    }
  }
}

TEST_F(BatchSweepTest, BisectionEndingOnTimeoutsIsNotCalledExact) {
  // Fits up to 100, but everything above 80 hangs: bisection between 64 and
  // 128 meets timeouts, so the maximum it reports is not exact.
  const auto r = run({"--max", "256", "--bisect", "--timeout", "1", "--metric-regex", kMetricRegex},
                     {"--max-fit", "100", "--hang-above", "80", "--step-ms", "1"});
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  EXPECT_NOT_CONTAINS(r.say("max_feasible_batch"), "exact");
  EXPECT_CONTAINS(r.say("stopped"), "failures in a row");
}

TEST_F(BatchSweepTest, NoBatchRunsOkIsACheckFailure) {
  const auto r = run({"--max", "8", "--metric-regex", kMetricRegex}, {"--max-fit", "0", "--step-ms", "1"});
  EXPECT_EQ(r.child.exit_code, 1) << r.child.output;
  EXPECT_EQ(r.say("recommended_batch"), "none: no batch size ran ok");
  EXPECT_EQ(statuses(r.csv()).at(1), "oom");
}

// A sweep to --max 64 (--csv out.csv) whose batches 1 and 2 finish quickly
// and whose batch 4 hangs; once it hangs, the shell runs `signal` (e.g.
// "kill -INT $pid") on the sweep's pid.
ChildResult sweep_signalled_while_hanging(const fs::path& dir, const std::string& signal) {
  const fs::path marker = dir / "hanging";
  const std::string cmd = "FAKE_TRAIN_HANG_MARKER=" + marker.string() + " " + BATCH_SWEEP_BIN + " --max 64 --csv " +
                          (dir / "out.csv").string() + " -- " + FAKE_TRAIN_BIN +
                          " --hang-above 2 --step-ms 1 & pid=$!; while [ ! -e " + marker.string() +
                          " ]; do sleep 0.05; done; " + signal + "; wait $pid";
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", cmd};
  spec.timeout_seconds = 60;
  return redline::run_child(spec);
}

TEST_F(BatchSweepTest, InterruptSavesThePointsMeasuredSoFar) {
  const ChildResult child = sweep_signalled_while_hanging(dir_, "kill -INT $pid");
  EXPECT_EQ(child.exit_code, 128 + SIGINT) << child.output;
  const fs::path csv = dir_ / "out.csv";
  ASSERT_TRUE(fs::exists(csv)) << child.output;
  const auto s = statuses(redline::read_csv(csv));
  EXPECT_EQ(s.at(1), "ok");
  EXPECT_EQ(s.at(2), "ok");
  EXPECT_EQ(s.at(4), "skipped");  // the trial that was running when Ctrl-C came
  EXPECT_CONTAINS(child.output, "none up to 2 (the largest batch that ran)");  // 4 was cut short, not run
}

// `timeout -s INT` signals the sweep and then its whole process group, so
// the sweep gets the one stop twice at once: still one interrupt, which
// saves the points, not "Ctrl-C again" (that quit and lost them all). Two
// different signals, since two of one kind may merge while pending; the
// first one's status stays.
TEST_F(BatchSweepTest, TwoSignalsAtOnceAreOneInterrupt) {
  const ChildResult child = sweep_signalled_while_hanging(dir_, "kill -INT $pid; kill -TERM $pid");
  EXPECT_EQ(child.exit_code, 128 + SIGINT) << child.output;
  const fs::path csv = dir_ / "out.csv";
  ASSERT_TRUE(fs::exists(csv)) << child.output;
  EXPECT_EQ(statuses(redline::read_csv(csv)).at(2), "ok");
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "left behind: " << e.path();
}

TEST_F(BatchSweepTest, BadInputIsRejectedNamingTheFlagAndValue) {
  const std::string train = FAKE_TRAIN_BIN;
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> expected;  // substrings of the message
  };
  const std::vector<Case> cases = {
      {{"--start", "abc", "--", train}, {"--start", "abc"}},
      {{"--start", "0", "--", train}, {"--start", "'0'"}},
      {{"--max", "4", "--start", "8", "--", train}, {"--max", "'4'"}},
      {{"--factor", "1", "--", train}, {"--factor", "'1'"}},
      {{"--plateau", "200", "--", train}, {"--plateau", "200"}},
      {{"--timeout", "-1", "--", train}, {"--timeout", "-1"}},
      {{"--repeats", "0", "--", train}, {"--repeats", "'0'"}},
      {{"--batch-sizes", "8:4:1", "--", train}, {"--batch-sizes", "8:4:1"}},
      {{"--metric-regex", "(", "--", train}, {"--metric-regex", "not a valid regular expression"}},
      {{"--metric-regex", "samples", "--", train}, {"--metric-regex", "capture group"}},
      {{"--oom-regex", "[", "--", train}, {"--oom-regex", "'['"}},
      {{"--global-batch", "4", "--data-parallel", "8", "--max", "4", "--", train}, {"--global-batch", "'4'"}},
      {{"--data-parallel", "8", "--", train}, {"--data-parallel '8'", "does nothing without --global-batch"}},
      {{"--metric-name", "step_time_ms", "--", train}, {"--metric-name", "step_time_ms"}},
      {{"--metric-name", "gpu_time_us", "--", train}, {"--metric-name", "gpu_time_us"}},
      {{"--metric-name", "two words", "--", train}, {"--metric-name", "two words"}},
      {{"--repeats", "2147483648", "--", train}, {"--repeats", "2147483648"}},
      {{"--max", "99999999999999999999", "--", train}, {"--max", "99999999999999999999"}},
      {{"--factor", "1.0000001", "--max", "1000000", "--", train}, {"--factor", "1.0000001"}},
      {{"--csv", "/proc/self", "--", train}, {"--csv", "/proc/self"}},
      // The upward search's flags do nothing beside --batch-sizes, even typed at their defaults.
      {{"--batch-sizes", "1,2", "--start", "1", "--", train}, {"--start '1'", "does nothing with --batch-sizes"}},
      {{"--batch-sizes", "1,2", "--max", "8", "--", train}, {"--max '8'", "does nothing with --batch-sizes"}},
      {{"--factor", "2", "--batch-sizes", "1,2", "--", train}, {"--factor '2'", "does nothing with --batch-sizes"}},
      {{"--tokens-per-sample", "1e308", "--", train}, {"--tokens-per-sample", "'1e308'", "at most 1000000000"}},
      {{"--no-such-flag", "--", train}, {"--no-such-flag"}},
      {{"--max", "8"}, {"missing COMMAND: use batch_sweep [OPTIONS] -- COMMAND"}},  // the name the tool passes in
      {{"--", "/no/such/program"}, {"COMMAND", "/no/such/program", "not found"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args[0]);
    const std::string out = expect_usage_error(c.args);
    for (const auto& want : c.expected) EXPECT_CONTAINS(out, want);
  }
}

}  // namespace
}  // namespace redline::testing
