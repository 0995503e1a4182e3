// What batch_sweep's integration tests share: running the real batch_sweep
// binary on a real command, and reading back its summary, CSV and JSON.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "harness/core/child_process.hpp"
#include "harness/report/csv_reader.hpp"
#include "tests/support.hpp"

namespace redline::testing {

namespace fs = std::filesystem;

inline const std::string kMetricRegex = "throughput: ([0-9.]+) samples/s";

struct SweepRun {
  ChildResult child;
  std::map<std::string, std::string> summary;  // "key: value" lines of stdout
  fs::path csv_path, json_path;
  CsvTable csv() const { return read_csv(csv_path); }
  const std::string& say(const std::string& key) const {
    static const std::string missing = "<missing>";
    auto it = summary.find(key);
    return it == summary.end() ? missing : it->second;
  }
};

class BatchSweepTest : public TempDirTest {
 protected:
  // batch_sweep FLAGS --csv --json -- COMMAND
  SweepRun run_command(std::vector<std::string> flags, std::vector<std::string> command, double timeout = 120) {
    SweepRun r;
    r.csv_path = dir_ / "out.csv";
    r.json_path = dir_ / "out.json";
    ChildSpec spec;
    spec.argv = {BATCH_SWEEP_BIN};
    spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
    spec.argv.insert(spec.argv.end(), {"--csv", r.csv_path.string(), "--json", r.json_path.string(), "--"});
    spec.argv.insert(spec.argv.end(), command.begin(), command.end());
    spec.timeout_seconds = timeout;
    r.child = run_child(spec);
    static const std::regex summary_line(R"(^(\w+):\s+(.*)$)");
    std::istringstream lines(r.child.output);
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (std::regex_match(line, m, summary_line)) r.summary[m[1]] = m[2];
    }
    return r;
  }

  // batch_sweep FLAGS --csv --json -- fake_train TRAIN_ARGS
  SweepRun run(std::vector<std::string> flags, std::vector<std::string> train_args, double timeout = 120) {
    train_args.insert(train_args.begin(), FAKE_TRAIN_BIN);
    return run_command(std::move(flags), std::move(train_args), timeout);
  }

  // Runs batch_sweep with bad input; returns its output after checking exit 2.
  std::string expect_usage_error(std::vector<std::string> args) {
    ChildSpec spec;
    spec.argv = {BATCH_SWEEP_BIN};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.timeout_seconds = 60;
    const ChildResult child = run_child(spec);
    EXPECT_EQ(child.exit_code, 2) << child.output;
    EXPECT_FALSE(fs::exists(dir_ / "out.csv"));
    return child.output;
  }
};

// Status per batch size in the CSV (first repetition).
inline std::map<long, std::string> statuses(const CsvTable& csv) {
  std::map<long, std::string> s;
  for (std::size_t r = 0; r < csv.rows.size(); ++r)
    if (csv.value(r, "repetition") == "0") s[std::stol(csv.value(r, "batch_size"))] = csv.value(r, "status");
  return s;
}

// The number a summary value starts with ("32 (the saturation batch)" -> 32); -1 when none.
inline long leading_number(const std::string& text) {
  std::size_t used = 0;
  try {
    const long n = std::stol(text, &used);
    return used > 0 ? n : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace redline::testing
