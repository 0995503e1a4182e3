// batch_sweep on a real training library's loop: scikit-learn's MLP
// (tests/sklearn_train.py) trained on the CPU under a real memory limit
// (prlimit --as), where numpy's MemoryError is the out-of-memory signal. The
// sweep must find the limit exactly with --bisect and place the saturation
// where the throughput stops growing. Skipped, with the reason, where
// scikit-learn or prlimit is missing (scripts/setup installs both).
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <regex>

#include "tests/batch_sweep_run.hpp"

namespace redline::testing {
namespace {

// A Python that imports scikit-learn: Debian's (python3-sklearn), else the first on PATH.
std::optional<std::string> python_with_sklearn() {
  for (const std::string name : {"/usr/bin/python3", "python3"}) {
    const auto python = find_executable(name);
    if (!python) continue;
    ChildSpec spec;
    spec.argv = {*python, "-c", "import sklearn, numpy"};
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

TEST_F(BatchSweepTest, ScikitLearnUnderAMemoryLimit) {
  const auto python = python_with_sklearn();
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

  // Saturation: one sample a step is bound by Python's overhead, so the batch
  // buys throughput at first; 90% of the best comes at a batch that ran,
  // well above 1 and within the limit.
  EXPECT_CONTAINS(r.say("metric"), "from --step-time-regex: batch / step time");
  const long at_90 = leading_number(r.say("batch_at_90pct_of_best"));
  EXPECT_GT(at_90, 1);
  EXPECT_LE(at_90, largest);
  EXPECT_GT(samples_per_s(csv, at_90), 3 * samples_per_s(csv, 1));
  const long saturation = leading_number(r.say("saturation_batch"));
  if (saturation > 0) EXPECT_EQ(s.at(saturation), "ok") << r.say("saturation_batch");
  // The recommendation is never below the batch at 90% of the best.
  EXPECT_GE(leading_number(r.say("recommended_batch")), at_90) << r.say("recommended_batch");
  EXPECT_FALSE(std::isnan(samples_per_s(csv, largest)));
}

}  // namespace
}  // namespace redline::testing
