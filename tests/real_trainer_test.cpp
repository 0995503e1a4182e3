// batch_sweep on real training libraries' loops. scikit-learn's MLP
// (tests/sklearn_train.py) trained on the CPU under a real memory limit
// (prlimit --as), where numpy's MemoryError is the out-of-memory signal: the
// sweep must find the limit exactly with --bisect and place the saturation
// where the throughput stops growing. PyTorch Lightning with each of its
// progress bars and Hugging Face's Trainer (tests/lightning_train.py,
// tests/hf_train.py): read from their own lines, the step time from the same
// figure; first from what their current releases printed (tests/captured/),
// which runs everywhere, then live where torch is installed. Skipped, with
// the reason, where a library or prlimit is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "tests/batch_sweep_run.hpp"

namespace redline::testing {
namespace {

// A Python that imports `modules` ("sklearn, numpy"): Debian's, else the first on PATH.
std::optional<std::string> python_with(const std::string& modules) {
  for (const std::string name : {"/usr/bin/python3", "python3"}) {
    const auto python = find_executable(name);
    if (!python) continue;
    ChildSpec spec;
    spec.argv = {*python, "-c", "import " + modules};
    spec.timeout_seconds = 120;
    if (run_child(spec).succeeded()) return python;
  }
  return std::nullopt;
}

double samples_per_s(const CsvTable& csv, long batch) {
  for (std::size_t r = 0; r < csv.rows.size(); ++r)
    if (std::stol(csv.value(r, "batch_size")) == batch && csv.value(r, "status") == "ok")
      return std::stod(csv.value(r, "samples_per_s"));
  return NAN;
}

// samples/s of every batch that ran (one trial each, as no --repeats is given).
std::map<long, double> ok_samples_per_s(const CsvTable& csv) {
  std::map<long, double> out;
  for (std::size_t r = 0; r < csv.rows.size(); ++r)
    if (csv.value(r, "status") == "ok")
      out[std::stol(csv.value(r, "batch_size"))] = std::stod(csv.value(r, "samples_per_s"));
  return out;
}

TEST_F(BatchSweepTest, ScikitLearnUnderAMemoryLimit) {
  const auto python = python_with("sklearn, numpy");
  if (!python) GTEST_SKIP() << "scikit-learn is not installed (scripts/setup installs python3-sklearn)";
  const auto prlimit = find_executable("prlimit");
  if (!prlimit) GTEST_SKIP() << "prlimit (util-linux) is not installed";
  const std::vector<std::string> train = {SKLEARN_TRAIN_PY, "--hidden", "256", "--steps", "4"};

  // The limit: the address space batch 1 takes, plus 8 MiB for the batch's arrays.
  ChildSpec probe;
  probe.argv = {*python};
  probe.argv.insert(probe.argv.end(), train.begin(), train.end());
  probe.argv.insert(probe.argv.end(), {"--batch-size", "1", "--report-vm"});
  probe.timeout_seconds = 120;
  const ChildResult one = run_child(probe);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(one.output, m, std::regex("VmPeak:\\s+([0-9]+) kB"))) << one.output;
  const long limit = std::stol(m[1]) * 1024 + (8l << 20);

  std::vector<std::string> command = {*prlimit, "--as=" + std::to_string(limit), *python};
  command.insert(command.end(), train.begin(), train.end());
  command.insert(command.end(), {"--batch-size", "{bs}"});
  const auto r = run_command({"--max", "4096", "--bisect", "--step-time-regex", "step time ([0-9.]+) ms"}, command,
                             600);
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;

  // The limit, exactly: the largest batch ran, the next ran out of memory in numpy.
  const CsvTable csv = r.csv();
  const long largest = leading_number(r.say("max_feasible_batch"));
  EXPECT_CONTAINS(r.say("max_feasible_batch"), "(exact, by bisection)");
  EXPECT_EQ(leading_number(r.say("first_oom_batch")), largest + 1);
  EXPECT_GT(largest, 16) << "8 MiB holds more than a few samples";
  const auto s = statuses(csv);
  EXPECT_EQ(s.at(largest), "ok");
  EXPECT_EQ(s.at(largest + 1), "oom");
  for (std::size_t row = 0; row < csv.rows.size(); ++row)
    if (csv.value(row, "status") == "oom") EXPECT_CONTAINS(csv.value(row, "note"), "MemoryError");
  EXPECT_EQ(csv.value(0, "program"), "sklearn_train.py");

  // Saturation, on whatever this machine measured (how fast it is decides
  // the figures, not the rule): 90% of the best comes at the smallest batch
  // that ran and reached it, within the limit.
  EXPECT_CONTAINS(r.say("metric"), "from --step-time-regex: batch / step time");
  const long at_90 = leading_number(r.say("batch_at_90pct_of_best"));
  EXPECT_LE(at_90, largest);
  const std::map<long, double> measured = ok_samples_per_s(csv);
  double best = 0;
  for (const auto& [batch, sps] : measured) best = std::max(best, sps);
  ASSERT_TRUE(measured.count(at_90)) << "batch " << at_90 << " ran";
  EXPECT_GE(measured.at(at_90), 0.9 * best * (1 - 1e-9));
  for (const auto& [batch, sps] : measured)
    if (batch < at_90) EXPECT_LT(sps, 0.9 * best * (1 + 1e-9)) << "batch " << batch << " already reached 90%";
  const long saturation = leading_number(r.say("saturation_batch"));
  if (saturation > 0) EXPECT_EQ(s.at(saturation), "ok") << r.say("saturation_batch");
  // The recommendation is never below the batch at 90% of the best.
  EXPECT_GE(leading_number(r.say("recommended_batch")), at_90) << r.say("recommended_batch");
  EXPECT_FALSE(std::isnan(samples_per_s(csv, largest)));
}

// A trainer's figure and the row's: samples/s from its line, and the step time from the same figure.
struct TrainerCase {
  std::string source;    // the summary's "from ..." name
  double steps_per_s;    // what it printed per step (Lightning) ...
  double samples_per_s;  // ... or per sample (Hugging Face); 0 where not
};

void expect_read_from_trainer(const SweepRun& r, long batch, const TrainerCase& expected) {
  ASSERT_EQ(r.child.exit_code, 0) << r.child.output;
  const CsvTable csv = r.csv();
  EXPECT_CONTAINS(r.say("metric"), "samples_per_s (from " + expected.source);
  const double samples = samples_per_s(csv, batch);
  if (expected.samples_per_s > 0) EXPECT_NEAR(samples, expected.samples_per_s, 1e-6 * samples);
  if (expected.steps_per_s > 0) EXPECT_NEAR(samples, batch * expected.steps_per_s, 1e-6 * samples);
  for (std::size_t row = 0; row < csv.rows.size(); ++row) {
    if (csv.value(row, "status") != "ok") continue;
    const double b = std::stod(csv.value(row, "batch_size")), sps = std::stod(csv.value(row, "samples_per_s"));
    EXPECT_NEAR(std::stod(csv.value(row, "step_time_ms")), 1e3 * b / sps, 1e-6 * 1e3 * b / sps)
        << "batch " << b << ": the step time is the trainer's, not the trial's wall time";
  }
}

// What Lightning 2.6 and transformers 5.24 printed, replayed by cat: the real batch_sweep reads the
// captured bytes as it read them live (tests/captured/README.md says how each was made).
TEST_F(BatchSweepTest, WhatRealTrainersPrintedIsRead) {
  const auto cat = find_executable("cat");
  ASSERT_TRUE(cat.has_value());
  const std::string dir = CAPTURED_DIR;
  const std::vector<std::tuple<std::string, long, TrainerCase>> cases = {
      {"lightning_rich.txt", 8, {"Lightning's rich bar it/s", 72.65, 0}},
      {"lightning_rich_wrapped.txt", 8, {"Lightning's rich bar it/s", 124.26, 0}},
      {"lightning_rich_terminal.txt", 8, {"Lightning's rich bar it/s", (100.13 + 100.27) / 2, 0}},
      {"lightning_tqdm.txt", 8, {"Lightning's tqdm bar it/s", 64.55, 0}},
      {"hf_trainer.txt", 4, {"Hugging Face Trainer's train_samples_per_second", 0, 71.92}}};
  for (const auto& [file, batch, expected] : cases) {
    SCOPED_TRACE(file);
    const auto r = run_command({"--batch-sizes", std::to_string(batch)}, {*cat, dir + "/" + file});
    expect_read_from_trainer(r, batch, expected);
  }
}

// The same scripts run live: whatever the current release prints is read, never the wall time.
TEST_F(BatchSweepTest, RealLightningAndHuggingFaceRuns) {
  const auto lightning = python_with("torch, lightning, rich");
  const auto hf = python_with("torch, transformers, accelerate");
  if (!lightning && !hf)
    GTEST_SKIP() << "neither lightning nor transformers is installed (pip install lightning rich transformers accelerate"
                    " torch)";
  const std::vector<std::string> sizes = {"--batch-sizes", "2,8"};
  if (lightning)
    for (const std::string bar : {"rich", "tqdm"}) {
      SCOPED_TRACE(bar);
      const auto r = run_command(sizes, {*lightning, LIGHTNING_TRAIN_PY, "--batch-size", "{bs}", "--bar", bar}, 600);
      expect_read_from_trainer(r, 8, {"Lightning's " + bar + " bar it/s", 0, 0});
    }
  if (hf) {
    const auto r = run_command(sizes, {*hf, HF_TRAIN_PY, "--batch-size", "{bs}"}, 600);
    expect_read_from_trainer(r, 8, {"Hugging Face Trainer's train_samples_per_second", 0, 0});
  }
  if (!lightning || !hf) GTEST_SKIP() << (lightning ? "transformers" : "lightning") << " is not installed";
}

}  // namespace
}  // namespace redline::testing
