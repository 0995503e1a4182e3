// redline compare: the schema's directions, the U test, results loading, and
// comparisons of real results: the real batch_sweep binary sweeping the real
// fake_train program, read back from the CSV files it wrote.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "harness/core/child_process.hpp"
#include "harness/tracking/compare.hpp"
#include "harness/report/csv_reader.hpp"
#include "harness/report/run_results.hpp"
#include "harness/report/schema.hpp"
#include "tests/gbench_compare.hpp"
#include "tests/support.hpp"

namespace fs = std::filesystem;
using namespace redline;
using redline::testing::read_all;

namespace {

const std::string kMetricRegex = "throughput: ([0-9.]+) samples/s";

const Schema& real_schema() { return Schema::compiled_in(); }

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// The CSV's lines (CRLF-terminated, as redline writes them).
std::vector<std::string> csv_lines(const fs::path& path) {
  std::vector<std::string> lines;
  std::istringstream in(read_all(path));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

void write_csv_lines(const fs::path& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\r\n";
  write_file(path, text);
}

class CompareRunsTest : public redline::testing::TempDirTest {
 protected:
  // batch_sweep --quiet --metric-regex ... SWEEP_ARGS --csv CSV -- fake_train --batch-size {bs} TRAIN_ARGS
  fs::path sweep(const fs::path& csv, std::vector<std::string> sweep_args, std::vector<std::string> train_args) {
    fs::create_directories(csv.parent_path());
    ChildSpec spec;
    spec.argv = {BATCH_SWEEP_BIN, "--quiet", "--metric-regex", kMetricRegex};
    spec.argv.insert(spec.argv.end(), sweep_args.begin(), sweep_args.end());
    spec.argv.insert(spec.argv.end(),
                     {"--csv", csv.string(), "--", FAKE_TRAIN_BIN, "--batch-size", "{bs}"});
    // A slower, noisier or smaller node is the machine, not the command: set
    // in fake_train's environment, so both runs share their case keys.
    std::string step_ms = "1";
    for (std::size_t i = 0; i + 1 < train_args.size(); i += 2) {
      const std::string& flag = train_args[i];
      if (flag == "--throughput-scale") spec.extra_env.emplace_back("FAKE_TRAIN_THROUGHPUT_SCALE", train_args[i + 1]);
      else if (flag == "--noise-pct") spec.extra_env.emplace_back("FAKE_TRAIN_NOISE_PCT", train_args[i + 1]);
      else if (flag == "--max-fit") spec.extra_env.emplace_back("FAKE_TRAIN_MAX_FIT", train_args[i + 1]);
      else if (flag == "--step-ms") step_ms = train_args[i + 1];
      else spec.argv.insert(spec.argv.end(), {flag, train_args[i + 1]});
    }
    spec.extra_env.emplace_back("FAKE_TRAIN_STEP_MS", step_ms);
    spec.timeout_seconds = 300;
    const ChildResult r = run_child(spec);
    EXPECT_TRUE(r.succeeded()) << r.describe_end() << "\n" << r.output;
    EXPECT_TRUE(fs::exists(csv)) << r.output;
    return csv;
  }
};

const MetricComparison* find_metric(const Comparison& c, const std::string& case_key, const std::string& metric) {
  for (const auto& m : c.metrics)
    if (m.case_key == case_key && m.metric == metric) return &m;
  return nullptr;
}

// The case key of batch `batch` in a sweep's CSV: batch_sweep adds the
// program and a hash of its configuration, the same for every sweep here.
std::string key(const fs::path& csv, long batch) {
  const CsvTable t = read_csv(csv);
  return "batch_size=" + std::to_string(batch) + ";program=fake_train;config=" + t.value(0, "config");
}

std::vector<std::string> cases_to_64(const fs::path& csv) {
  std::vector<std::string> keys;
  for (long batch = 1; batch <= 64; batch *= 2) keys.push_back(key(csv, batch));
  return keys;
}

std::string dump(const Comparison& c) { return format_comparison(c, CompareFormat::table, "baseline", "current"); }

std::string line_with(const std::string& output, const std::string& what);

// ---------------------------------------------------------------- Mann-Whitney U

TEST(CompareMannWhitney, KnownValues) {
  // scipy.stats.mannwhitneyu(..., alternative="two-sided", method="exact").
  EXPECT_NEAR(mann_whitney_p({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 0.007936507936507936, 1e-12);
  EXPECT_NEAR(mann_whitney_p({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}), 0.007936507936507936, 1e-12);
  // 3 vs 3 fully separated: 2 of the C(6,3) = 20 orderings are as extreme.
  EXPECT_NEAR(mann_whitney_p({1, 2, 3}, {4, 5, 6}), 0.1, 1e-12);
  // Interleaved: U = 3 of 9; P(U <= 3) = 7/20.
  EXPECT_NEAR(mann_whitney_p({1, 3, 5}, {2, 4, 6}), 0.7, 1e-12);
  // Unequal sizes (enumerated over C(10,4) = 210 orderings): U = 8 of 24.
  EXPECT_NEAR(mann_whitney_p({10, 20, 30, 40}, {5, 15, 25, 35, 45, 55}), 0.7619047619047619, 1e-12);
  // Identical samples: no evidence at all.
  EXPECT_DOUBLE_EQ(mann_whitney_p({1, 2, 3}, {1, 2, 3}), 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_p({5, 5, 5, 5}, {5, 5, 5, 5}), 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_p({}, {1, 2}), 1.0);
}

TEST(CompareMannWhitney, ExactWithTies) {
  // Ties are counted exactly for up to 10 values a side: the rank sum's
  // distribution over every choice of which pooled values are a's, midranks
  // included. Three 3s against three 2.4s: a holds the three top midranks in
  // 1 of C(6,3) = 20 choices, as extreme at either end, so p = 2/20. (The
  // normal approximation read 0.047 here: significant where nothing can be.)
  EXPECT_NEAR(mann_whitney_p({3, 3, 3}, {2.4, 2.4, 2.4}), 0.1, 1e-12);
  // a = 1 2 2 3 4, b = 2 4 5 6 7: midranks 1 3 3 3 5 6.5 6.5 8 9 10, a's sum
  // 18.5. Of the C(10,5) = 252 choices of five, 10 sum to 18.5 or less (a
  // count made separately, by listing them all), and as many to 36.5 or more
  // (their complements), so p = 20/252. The normal approximation read 0.071.
  EXPECT_NEAR(mann_whitney_p({1, 2, 2, 3, 4}, {2, 4, 5, 6, 7}), 20.0 / 252, 1e-12);
}

TEST(CompareMannWhitney, NormalApproximationWithTiesBeyondTenValues) {
  // 11 vs 11 with every value tied within its side: U = 0, mean 60.5, tie
  // term 2 x (11^3 - 11) = 2640, var = 121/12 x (23 - 2640/462) = 174.24,
  // z = 60 / 13.2 = 4.54545, p = erfc(z / sqrt 2).
  const std::vector<double> a(11, 1.0), b(11, 2.0);
  EXPECT_NEAR(mann_whitney_p(a, b), std::erfc(60 / std::sqrt(121.0 / 12 * (23 - 2640.0 / 462)) / std::sqrt(2.0)), 1e-12);
}

TEST(CompareWelch, KnownValues) {
  // 1 2 3 against 4 5 6: t = -3 / sqrt(2/3), 4 degrees of freedom; for 4 the
  // two-sided tail has the closed form 1 - |t| (t^2 + 6) / (t^2 + 4)^1.5.
  const double t = 3 / std::sqrt(2.0 / 3);
  EXPECT_NEAR(welch_t_p({1, 2, 3}, {4, 5, 6}), 1 - t * (t * t + 6) / std::pow(t * t + 4, 1.5), 1e-12);
  // 2 values a side, the spread all on one: 1 degree of freedom, which is
  // Cauchy: P(|T| >= t) = 1 - 2 atan(t) / pi, with t = 2 here.
  EXPECT_NEAR(welch_t_p({0, 2}, {3, 3}), 1 - 2 * std::atan(2.0) / M_PI, 1e-12);
  // 2 degrees of freedom: P(|T| >= t) = 1 - t / sqrt(2 + t^2), here with 3
  // values a side whose spread is all on one side (df = 2, t = 2).
  EXPECT_NEAR(welch_t_p({-1, 0, 1}, {2 / std::sqrt(3.0), 2 / std::sqrt(3.0), 2 / std::sqrt(3.0)}),
              1 - 2 / std::sqrt(6.0), 1e-12);
  // No spread anywhere: a difference is certain, none is no evidence.
  EXPECT_DOUBLE_EQ(welch_t_p({5, 5}, {4, 4}), 0);
  EXPECT_DOUBLE_EQ(welch_t_p({5, 5}, {5, 5}), 1);
  EXPECT_DOUBLE_EQ(welch_t_p({5}, {4, 4}), 1);
}

TEST(CompareMannWhitney, NormalApproximationForLargerSamples) {
  // 11 vs 11 fully separated: U = 0, mean 60.5, var = 121 * 23 / 12,
  // z = 60 / 15.2288 = 3.93992, p = erfc(z / sqrt 2) = 8.1515e-5.
  std::vector<double> a, b;
  for (int i = 1; i <= 11; ++i) a.push_back(i), b.push_back(i + 11);
  EXPECT_NEAR(mann_whitney_p(a, b), 8.151536127743262e-05, 1e-10);
}

// ---------------------------------------------------------------- loading

TEST_F(CompareRunsTest, LoadsARealSweep) {
  const fs::path csv = sweep(dir_ / "sweep.csv", {"--max", "8", "--repeats", "2"}, {});
  const RunResults r = load_results(csv);
  EXPECT_EQ(r.source, csv.string());
  ASSERT_EQ(r.rows.size(), 8u);
  const ResultRow& row = r.rows[3];
  EXPECT_EQ(row.tool, "batch_sweep");
  EXPECT_EQ(row.case_key, key(csv, 2));
  EXPECT_EQ(row.repetition, 1);
  EXPECT_EQ(row.status, RowStatus::ok);
  EXPECT_EQ(row.file, csv.string());
  EXPECT_EQ(row.line, 5u);
  EXPECT_EQ(row.params.at("batch_size"), "2");
  EXPECT_FALSE(row.metrics.count("batch_size"));
  EXPECT_DOUBLE_EQ(row.metrics.at("samples_per_s"), 2000);
  EXPECT_TRUE(row.metrics.count("step_time_ms"));
  EXPECT_TRUE(row.metrics.count("gain_pct"));
  EXPECT_FALSE(r.rows[0].metrics.count("gain_pct"));  // empty cell: absent, never 0
}

TEST_F(CompareRunsTest, LoadsARunFolderSkippingSuiteAndHistory) {
  sweep(dir_ / "run" / "b_sweep.csv", {"--max", "4"}, {});
  sweep(dir_ / "run" / "a_sweep.csv", {"--max", "2"}, {});
  write_file(dir_ / "run" / "suite.csv", "name,status,seconds\r\nx,ok,1\r\n");
  write_file(dir_ / "run" / "history.csv", "whatever\r\n1\r\n");
  write_file(dir_ / "run" / "notes.txt", "not a csv");
  const RunResults r = load_results(dir_ / "run");
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_EQ(fs::path(r.rows.front().file).filename(), "a_sweep.csv");  // sorted by name
  EXPECT_EQ(fs::path(r.rows.back().file).filename(), "b_sweep.csv");
}

TEST_F(CompareRunsTest, MissingOrEmptyInputIsAnError) {
  fs::create_directories(dir_ / "empty");
  write_file(dir_ / "empty" / "suite.csv", "name,status,seconds\r\n");
  try {
    load_results(dir_ / "empty");
    ADD_FAILURE() << "no error for a folder without results";
  } catch (const std::runtime_error& e) {
    EXPECT_CONTAINS(e.what(), (dir_ / "empty").string());
  }
  EXPECT_THROW(load_results(dir_ / "nope"), std::runtime_error);
}

// A real CSV, then corrupted.
TEST_F(CompareRunsTest, MalformedCsvNamesFileAndLine) {
  const fs::path good = sweep(dir_ / "good.csv", {"--max", "64"}, {});
  auto lines = csv_lines(good);
  ASSERT_EQ(lines.size(), 8u);  // header + 7 batch sizes

  auto expect_csv_error = [](const fs::path& file, std::size_t line, const std::string& words) {
    try {
      load_results(file);
      ADD_FAILURE() << "no error for " << file;
    } catch (const CsvError& e) {
      EXPECT_EQ(e.line(), line) << e.what();
      const std::string where = file.string() + ":" + std::to_string(line) + ":";
      EXPECT_CONTAINS(e.what(), where);
      EXPECT_CONTAINS(e.what(), words);
    }
  };

  auto wrong_count = lines;
  wrong_count.insert(wrong_count.begin() + 5, "1,2,3");  // becomes line 6
  write_csv_lines(dir_ / "fields.csv", wrong_count);
  expect_csv_error(dir_ / "fields.csv", 6, "fields");

  auto unclosed = lines;
  // Line 9: the note opens a quote that never closes.
  unclosed.push_back("r,t,h,none,batch_sweep,batch_size=128,0,128,1,2,3,,ok,\"unclosed");
  write_csv_lines(dir_ / "quote.csv", unclosed);
  try {
    load_results(dir_ / "quote.csv");
    ADD_FAILURE() << "no error for an unclosed quote";
  } catch (const CsvError& e) {
    EXPECT_CONTAINS(e.what(), (dir_ / "quote.csv").string() + ":9:");
  }

  auto not_number = lines;
  const auto pos = not_number[3].find(",4000,");  // batch_size=4's samples_per_s on line 4
  ASSERT_NE(pos, std::string::npos) << not_number[3];
  not_number[3].replace(pos, 6, ",fast,");
  write_csv_lines(dir_ / "number.csv", not_number);
  expect_csv_error(dir_ / "number.csv", 4, "samples_per_s");

  auto renamed = lines;
  renamed[0].replace(renamed[0].find(",status,"), 8, ",state,");
  write_csv_lines(dir_ / "columns.csv", renamed);
  try {
    load_results(dir_ / "columns.csv");
    ADD_FAILURE() << "no error for a CSV without a status column";
  } catch (const std::runtime_error& e) {
    EXPECT_CONTAINS(e.what(), (dir_ / "columns.csv").string());
    EXPECT_CONTAINS(e.what(), "status");
  }

  // A folder holding the bad file fails the same way.
  fs::create_directories(dir_ / "run");
  fs::copy_file(dir_ / "fields.csv", dir_ / "run" / "sweep.csv");
  expect_csv_error(dir_ / "run" / "sweep.csv", 6, "fields");
  EXPECT_THROW(load_results(dir_ / "run"), CsvError);
}

// A column named twice (read as the last one) and hexadecimal numbers are
// refused; a subnormal such as 1e-320 is a finite number and is read.
TEST_F(CompareRunsTest, CsvNumbersAndColumnsAreReadStrictly) {
  const std::string header = "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,batch_size,samples_per_s,status,note\n";
  auto with_value = [&](const std::string& value) {
    return header + "r,2026-01-01T00:00:00Z,h,none,batch_sweep,batch_size=1,0,1," + value + ",ok,\n";
  };
  write_file(dir_ / "tiny.csv", with_value("1e-320"));
  const RunResults tiny = load_results(dir_ / "tiny.csv");
  ASSERT_EQ(tiny.rows.size(), 1u);
  EXPECT_EQ(tiny.rows[0].metrics.at("samples_per_s"), 1e-320);

  for (const char* hex : {"0x10", "0X1p4", "-0x2"}) {
    write_file(dir_ / "hex.csv", with_value(hex));
    try {
      load_results(dir_ / "hex.csv");
      ADD_FAILURE() << "no error for " << hex;
    } catch (const CsvError& e) {
      EXPECT_CONTAINS(e.what(), (dir_ / "hex.csv").string() + ":2:");
      EXPECT_CONTAINS(e.what(), "samples_per_s");
    }
  }

  write_file(dir_ / "twice.csv",
             "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,batch_size,samples_per_s,samples_per_s,status,note\n"
             "r,2026-01-01T00:00:00Z,h,none,batch_sweep,batch_size=1,0,1,5,7,ok,\n");
  try {
    load_results(dir_ / "twice.csv");
    ADD_FAILURE() << "no error for a column named twice";
  } catch (const CsvError& e) {
    EXPECT_CONTAINS(e.what(), (dir_ / "twice.csv").string() + ":1:");
    EXPECT_CONTAINS(e.what(), "\"samples_per_s\" appears twice");
  }
}

// ---------------------------------------------------------------- real comparisons

TEST_F(CompareRunsTest, PlantedRegressionIsSlower) {
  const fs::path base = sweep(dir_ / "base.csv", {"--max", "64"}, {});
  const fs::path cur = sweep(dir_ / "cur.csv", {"--max", "64"}, {"--throughput-scale", "0.8"});
  const Comparison c = compare_results(load_results(base), load_results(cur), real_schema());
  EXPECT_TRUE(c.any_slower());
  EXPECT_TRUE(c.only_in_baseline.empty());
  EXPECT_TRUE(c.only_in_current.empty());
  EXPECT_TRUE(c.not_compared.empty()) << dump(c);
  // Only the tracked metric is judged: step and trial times include process start-up.
  ASSERT_EQ(c.metrics.size(), cases_to_64(base).size()) << dump(c);
  for (const auto& key : cases_to_64(base)) {
    const MetricComparison* m = find_metric(c, key, "samples_per_s");
    ASSERT_TRUE(m) << key << "\n" << dump(c);
    EXPECT_EQ(m->tool, "batch_sweep");
    EXPECT_EQ(m->verdict, Verdict::slower) << key;
    EXPECT_NEAR(m->change, -0.2, 1e-6) << key;
    EXPECT_EQ(m->baseline_n, 1);
    EXPECT_FALSE(m->p_value);
    EXPECT_FALSE(m->noise);  // no time_cv, a single value: no noise band
  }
  EXPECT_NEAR(c.geomean_improvement, 0.8, 1e-6);

  // The same files, judging everything: the untracked wall times join.
  CompareOptions all;
  all.all_metrics = true;
  const Comparison everything = compare_results(load_results(base), load_results(cur), real_schema(), all);
  EXPECT_TRUE(find_metric(everything, key(base, 8), "step_time_ms"));
  EXPECT_TRUE(find_metric(everything, key(base, 8), "trial_time_s"));
}

TEST_F(CompareRunsTest, PlantedRegressionWithRepetitionsIsSignificant) {
  // 5 vs 5 repetitions with +-5% noise around a 20% drop: the samples never
  // overlap, so U = 0 and the exact two-sided p is 2/252 < 0.05 every time.
  const fs::path base = sweep(dir_ / "base.csv", {"--max", "16", "--repeats", "5"}, {"--noise-pct", "5"});
  const fs::path cur =
      sweep(dir_ / "cur.csv", {"--max", "16", "--repeats", "5"}, {"--noise-pct", "5", "--throughput-scale", "0.8"});
  const Comparison c = compare_results(load_results(base), load_results(cur), real_schema());
  ASSERT_EQ(c.metrics.size(), 5u) << dump(c);
  for (const auto& m : c.metrics) {
    EXPECT_EQ(m.verdict, Verdict::slower) << m.case_key << "\n" << dump(c);
    EXPECT_EQ(m.baseline_n, 5);
    EXPECT_EQ(m.current_n, 5);
    ASSERT_TRUE(m.p_value);
    EXPECT_NEAR(*m.p_value, 2.0 / 252, 1e-12);
  }
  EXPECT_TRUE(c.any_slower());
}

TEST_F(CompareRunsTest, IdenticalRunsAreSame) {
  // fake_train's printed throughput is its model's, so two runs agree exactly.
  const fs::path base = sweep(dir_ / "base.csv", {"--max", "64"}, {});
  const fs::path cur = sweep(dir_ / "cur.csv", {"--max", "64"}, {});
  const Comparison c = compare_results(load_results(base), load_results(cur), real_schema());
  ASSERT_EQ(c.metrics.size(), cases_to_64(base).size()) << dump(c);
  for (const auto& m : c.metrics) {
    EXPECT_EQ(m.verdict, Verdict::same) << m.case_key;
    EXPECT_DOUBLE_EQ(m.change, 0);
  }
  EXPECT_FALSE(c.any_slower());
  EXPECT_DOUBLE_EQ(c.geomean_improvement, 1);
}

TEST_F(CompareRunsTest, NoisyRunsWithThreeRepetitionsAreJudgedByWelchsTest) {
  // A real 8% drop in +-40% noise, 3 repetitions a side: the U test could
  // never reach p < 0.05 with 3 a side (its smallest p is 0.1), so Welch's
  // t-test judges, and the verdict follows its p.
  const fs::path base = sweep(dir_ / "base.csv", {"--max", "64", "--repeats", "3"}, {"--noise-pct", "40"});
  const fs::path cur = sweep(dir_ / "cur.csv", {"--max", "64", "--repeats", "3"},
                             {"--noise-pct", "40", "--throughput-scale", "0.92"});
  const Comparison c = compare_results(load_results(base), load_results(cur), real_schema());
  ASSERT_EQ(c.metrics.size(), cases_to_64(base).size()) << dump(c);
  for (const auto& m : c.metrics) {
    EXPECT_EQ(m.baseline_n, 3);
    EXPECT_EQ(m.current_n, 3);
    EXPECT_EQ(m.test, SignificanceTest::welch_t) << m.case_key;
    ASSERT_TRUE(m.p_value);
    const Verdict expected = std::fabs(m.change) <= 0.05 ? Verdict::same
                             : *m.p_value >= 0.05      ? Verdict::noisy
                             : m.current < m.baseline  ? Verdict::slower
                                                       : Verdict::faster;
    EXPECT_EQ(m.verdict, expected) << m.case_key << "\n" << dump(c);
  }
}

TEST_F(CompareRunsTest, TheTestFollowsTheRepetitions) {
  // Rows written here, so each verdict is known: per case, the repetitions
  // decide which test judges it.
  const std::string header = "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,bytes,busbw_GBps,status,note\r\n";
  auto rows = [](int bytes, const std::vector<double>& values) {
    std::ostringstream out;
    for (std::size_t rep = 0; rep < values.size(); ++rep)
      out << "r,2026-01-01T00:00:00Z,h,none,allreduce_bench,bytes=" << bytes << "," << rep << "," << bytes << ","
          << values[rep] << ",ok,\r\n";
    return out.str();
  };
  write_file(dir_ / "base.csv", header + rows(1, {100, 101}) + rows(2, {100, 60, 140}) +
                                    rows(3, {100, 101, 102, 103, 104}) + rows(4, {100, 102, 101}));
  write_file(dir_ / "cur.csv", header + rows(1, {50, 50.5}) + rows(2, {92, 130, 55}) +
                                   rows(3, {50, 51, 52, 53, 54}) + rows(4, {100}));
  const Comparison c = compare_results(load_results(dir_ / "base.csv"), load_results(dir_ / "cur.csv"), real_schema());
  ASSERT_EQ(c.metrics.size(), 4u) << dump(c);
  // A steady halving with 2 a side: the U test's smallest p would be 1/3
  // (NOISY), so Welch's: t = 50.25 / sqrt(0.25 + 0.0625) = 89.9 on 1.5
  // degrees of freedom, p = 0.000996.
  const MetricComparison* halved = find_metric(c, "bytes=1", "busbw_GBps");
  EXPECT_EQ(halved->test, SignificanceTest::welch_t);
  EXPECT_EQ(halved->verdict, Verdict::slower) << dump(c);
  EXPECT_NEAR(*halved->p_value, 0.000996, 1e-6);
  EXPECT_CONTAINS(dump(c), "(t)");
  // An 8% change inside +-40% spread, 3 a side: Welch's p is far from 0.05.
  const MetricComparison* noisy = find_metric(c, "bytes=2", "busbw_GBps");
  EXPECT_EQ(noisy->test, SignificanceTest::welch_t);
  EXPECT_EQ(noisy->verdict, Verdict::noisy) << dump(c);
  EXPECT_GT(*noisy->p_value, 0.5);
  // 5 a side: the U test (no ordering overlaps: 2/252).
  const MetricComparison* ranked = find_metric(c, "bytes=3", "busbw_GBps");
  EXPECT_EQ(ranked->test, SignificanceTest::mann_whitney_u);
  EXPECT_NEAR(*ranked->p_value, 2.0 / 252, 1e-12);
  EXPECT_EQ(ranked->verdict, Verdict::slower);
  // One value now: the noise band from the baseline's repetitions (CV 1/101).
  const MetricComparison* single = find_metric(c, "bytes=4", "busbw_GBps");
  EXPECT_EQ(single->test, SignificanceTest::noise_band);
  EXPECT_FALSE(single->p_value);
  EXPECT_NEAR(*single->noise, 1.0 / 101, 1e-12);
  EXPECT_EQ(single->verdict, Verdict::same);
}

TEST_F(CompareRunsTest, MissingAndFailedCasesAreListed) {
  const fs::path base = sweep(dir_ / "base.csv", {"--max", "64"}, {});
  const fs::path shorter = sweep(dir_ / "short.csv", {"--max", "32"}, {});
  Comparison c = compare_results(load_results(base), load_results(shorter), real_schema());
  EXPECT_EQ(c.only_in_baseline, std::vector<std::string>{"batch_sweep " + key(base, 64)}) << dump(c);
  EXPECT_TRUE(c.only_in_current.empty());
  EXPECT_EQ(c.metrics.size(), 6u);
  EXPECT_FALSE(c.any_slower());

  // The other way round it is only in the current run.
  c = compare_results(load_results(shorter), load_results(base), real_schema());
  EXPECT_EQ(c.only_in_current, std::vector<std::string>{"batch_sweep " + key(base, 64)});

  // A case that runs out of memory in the current run has no ok row there.
  const fs::path oom = sweep(dir_ / "oom.csv", {"--max", "64"}, {"--max-fit", "40"});
  c = compare_results(load_results(base), load_results(oom), real_schema());
  ASSERT_EQ(c.only_in_baseline.size(), 1u) << dump(c);
  EXPECT_EQ(c.only_in_baseline[0], "batch_sweep " + key(base, 64) + " (no ok row in current: oom)");
  EXPECT_EQ(c.metrics.size(), 6u);
  const std::string table = format_comparison(c, CompareFormat::table, "base", "oom");
  EXPECT_CONTAINS(table, "batch_sweep " + key(base, 64) + " (no ok row in current: oom)");
}

TEST_F(CompareRunsTest, RunFoldersKeepSameToolEntriesApart) {
  // Two suite entries run the same tool with the same case keys; only the
  // second regressed. Mixed together, each case would be a 2-vs-2 test.
  sweep(dir_ / "base" / "model_a.csv", {"--max", "8"}, {});
  sweep(dir_ / "base" / "model_b.csv", {"--max", "8"}, {"--throughput-scale", "0.5"});
  sweep(dir_ / "cur" / "model_a.csv", {"--max", "8"}, {});
  sweep(dir_ / "cur" / "model_b.csv", {"--max", "8"}, {"--throughput-scale", "0.4"});
  const Comparison c = compare_results(load_results(dir_ / "base"), load_results(dir_ / "cur"), real_schema());
  ASSERT_EQ(c.metrics.size(), 8u) << dump(c);
  for (const auto& m : c.metrics) {
    EXPECT_EQ(m.baseline_n, 1) << dump(c);
    if (m.tool == "batch_sweep[model_a]") {
      EXPECT_EQ(m.verdict, Verdict::same) << m.case_key;
    } else if (m.tool == "batch_sweep[model_b]") {
      EXPECT_EQ(m.verdict, Verdict::slower) << m.case_key;
    } else {
      ADD_FAILURE() << m.tool;
    }
  }

  // One CSV per tool: folders and files match each other by tool and key.
  const Comparison single = compare_results(load_results(dir_ / "base" / "model_a.csv"),
                                            load_results(dir_ / "cur" / "model_b.csv"), real_schema());
  ASSERT_EQ(single.metrics.size(), 4u);
  EXPECT_EQ(single.metrics[0].tool, "batch_sweep");
  EXPECT_TRUE(single.any_slower());
}

TEST_F(CompareRunsTest, NoiseBandFromTimeCv) {
  // The single-value rule with a measured CV (allreduce_bench --per-iter's
  // time_cv): a change within twice the larger CV is NOISY.
  const std::string header =
      "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,bytes,time_us,busbw_GBps,time_cv,status,note\r\n";
  auto row = [](int bytes, double busbw, const std::string& cv) {
    std::ostringstream out;
    out << "r,2026-01-01T00:00:00Z,h,none,allreduce_bench,bytes=" << bytes << ",0," << bytes << ",10," << busbw
        << "," << cv << ",ok,\r\n";
    return out.str();
  };
  write_file(dir_ / "base.csv", header + row(1, 100, "0.05") + row(2, 100, "0.05") + row(3, 100, "") +
                                    row(4, 100, "0.02") + row(5, 100, "0.01"));
  write_file(dir_ / "cur.csv", header + row(1, 91, "0.02") + row(2, 85, "0.05") + row(3, 91, "") +
                                   row(4, 110, "0.02") + row(5, 98, "0.01"));
  const Comparison c = compare_results(load_results(dir_ / "base.csv"), load_results(dir_ / "cur.csv"), real_schema());
  ASSERT_EQ(c.metrics.size(), 5u) << dump(c);  // busbw_GBps only: time_us and time_cv are untracked
  EXPECT_EQ(find_metric(c, "bytes=1", "busbw_GBps")->verdict, Verdict::noisy);   // 9% <= 2 x 5%
  EXPECT_NEAR(*find_metric(c, "bytes=1", "busbw_GBps")->noise, 0.05, 1e-12);
  EXPECT_EQ(find_metric(c, "bytes=2", "busbw_GBps")->verdict, Verdict::slower);  // 15% > 2 x 5%
  EXPECT_EQ(find_metric(c, "bytes=3", "busbw_GBps")->verdict, Verdict::slower);  // no CV: no band
  EXPECT_FALSE(find_metric(c, "bytes=3", "busbw_GBps")->noise);
  EXPECT_EQ(find_metric(c, "bytes=4", "busbw_GBps")->verdict, Verdict::faster);  // +10% > 2 x 2%
  EXPECT_EQ(find_metric(c, "bytes=5", "busbw_GBps")->verdict, Verdict::same);    // 2% <= threshold
  EXPECT_TRUE(c.not_compared.empty());

  // A metric SCHEMA.md does not know is listed once, not judged.
  const std::string odd_header =
      "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,bytes,widgets,status,note\r\n";
  write_file(dir_ / "odd.csv", odd_header + "r,t,h,none,allreduce_bench,bytes=1,0,1,5,ok,\r\n" +
                                   "r,t,h,none,allreduce_bench,bytes=2,0,2,5,ok,\r\n");
  const Comparison odd = compare_results(load_results(dir_ / "odd.csv"), load_results(dir_ / "odd.csv"), real_schema());
  EXPECT_EQ(odd.not_compared, std::vector<std::string>{"widgets"});
  EXPECT_TRUE(odd.metrics.empty());
}

// A time_cv no measurement gives (negative, above 10, 1e300) is no noise band: it
// once made a -10% move NOISY and hid a -30% regression.
TEST_F(CompareRunsTest, InvalidTimeCvIsNoNoiseBand) {
  const std::string header =
      "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,bytes,busbw_GBps,time_cv,status,note\n";
  auto row = [](int bytes, double busbw, const std::string& cv) {
    std::ostringstream out;
    out << "r,2026-01-01T00:00:00Z,h,none,allreduce_bench,bytes=" << bytes << ",0," << bytes << "," << busbw << ","
        << cv << ",ok,\n";
    return out.str();
  };
  write_file(dir_ / "base.csv", header + row(1, 100, "-5") + row(2, 100, "1e300") + row(3, 100, "11") +
                                    row(4, 100, "0.2") + row(5, 1e-300, ""));
  write_file(dir_ / "cur.csv", header + row(1, 90, "0.01") + row(2, 70, "0.01") + row(3, 70, "") +
                                   row(4, 70, "0.01") + row(5, 1, ""));
  const Comparison c = compare_results(load_results(dir_ / "base.csv"), load_results(dir_ / "cur.csv"), real_schema());
  ASSERT_EQ(c.metrics.size(), 5u) << dump(c);
  EXPECT_EQ(find_metric(c, "bytes=1", "busbw_GBps")->verdict, Verdict::slower) << dump(c);  // 10% > 2 x 1%
  EXPECT_EQ(find_metric(c, "bytes=2", "busbw_GBps")->verdict, Verdict::slower) << dump(c);
  EXPECT_NEAR(*find_metric(c, "bytes=2", "busbw_GBps")->noise, 0.01, 1e-12);
  EXPECT_EQ(find_metric(c, "bytes=3", "busbw_GBps")->verdict, Verdict::slower) << dump(c);
  EXPECT_EQ(find_metric(c, "bytes=4", "busbw_GBps")->verdict, Verdict::noisy);  // a real 20% CV still counts
  const std::string text = dump(c);
  EXPECT_CONTAINS(line_with(text, "bytes=5 "), ">+1000000.0%");  // bounded, not 300 digits
  for (const auto& m : c.metrics) EXPECT_LT(change_text(m).size(), 16u) << change_text(m);
}

// The direction follows the move, not the sign of (current - baseline) /
// baseline: gain_pct (higher is better) from -10 to 20 improved.
TEST_F(CompareRunsTest, NegativeOrZeroBaselineKeepsTheDirection) {
  const std::string header = "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,batch_size,gain_pct,status,note\n";
  auto row = [](int batch, double gain) {
    std::ostringstream out;
    out << "r,2026-01-01T00:00:00Z,h,none,batch_sweep,batch_size=" << batch << ",0," << batch << "," << gain << ",ok,\n";
    return out.str();
  };
  write_file(dir_ / "base.csv", header + row(1, -10) + row(2, 20) + row(3, 0) + row(4, -10));
  write_file(dir_ / "cur.csv", header + row(1, 20) + row(2, -10) + row(3, 5) + row(4, -20));
  CompareOptions all;
  all.all_metrics = true;
  const Comparison c =
      compare_results(load_results(dir_ / "base.csv"), load_results(dir_ / "cur.csv"), real_schema(), all);
  ASSERT_EQ(c.metrics.size(), 4u) << dump(c);
  EXPECT_EQ(find_metric(c, "batch_size=1", "gain_pct")->verdict, Verdict::faster) << dump(c);
  EXPECT_NEAR(find_metric(c, "batch_size=1", "gain_pct")->change, 3.0, 1e-12);  // +30 over |-10|
  EXPECT_EQ(find_metric(c, "batch_size=2", "gain_pct")->verdict, Verdict::slower);
  EXPECT_EQ(find_metric(c, "batch_size=3", "gain_pct")->verdict, Verdict::faster);
  EXPECT_EQ(find_metric(c, "batch_size=4", "gain_pct")->verdict, Verdict::slower);  // -10 -> -20 fell
  EXPECT_NEAR(find_metric(c, "batch_size=4", "gain_pct")->change, -1.0, 1e-12);
  const std::string text = dump(c);
  EXPECT_CONTAINS(line_with(text, "batch_size=1 "), "+300.0%");
  EXPECT_CONTAINS(line_with(text, "batch_size=3 "), "from 0");  // no percentage from zero
  EXPECT_NOT_CONTAINS(text, "inf");
}

TEST_F(CompareRunsTest, FormatsTableMarkdownAndJson) {
  const fs::path base = sweep(dir_ / "base.csv", {"--max", "64"}, {});
  const fs::path cur = sweep(dir_ / "cur.csv", {"--max", "32"}, {"--throughput-scale", "0.8"});
  const Comparison c = compare_results(load_results(base), load_results(cur), real_schema());

  const std::string table = format_comparison(c, CompareFormat::table, base.string(), cur.string());
  EXPECT_CONTAINS(table, "SLOWER");
  EXPECT_CONTAINS(table, "\n!  batch_sweep  " + key(base, 1) + " ");
  EXPECT_CONTAINS(table, "-20.0%");
  EXPECT_CONTAINS(table, "only in baseline:\n  batch_sweep " + key(base, 64) + "\n");
  EXPECT_CONTAINS(table, "geomean");

  const std::string md = format_comparison(c, CompareFormat::markdown, base.string(), cur.string());
  EXPECT_CONTAINS(md, "\n| tool | case | metric | baseline | current | change | p / noise | verdict |\n|---|");
  EXPECT_CONTAINS(md, "**! SLOWER**");
  EXPECT_CONTAINS(md, "\n- batch_sweep " + key(base, 64) + "\n");

  const std::string json = format_comparison(c, CompareFormat::json, base.string(), cur.string());
  write_file(dir_ / "c.json", json);
  const auto python = find_executable("python3");
  if (!python) GTEST_SKIP() << "python3 is not installed: cannot check that the JSON parses";
  ChildSpec check;
  check.argv = {*python, "-c",
                "import json, sys\n"
                "d = json.load(open(sys.argv[1]))\n"
                "assert d['any_slower'] is True, d['any_slower']\n"
                "assert len(d['metrics']) == 6, len(d['metrics'])\n"
                "assert all(m['verdict'] == 'SLOWER' for m in d['metrics'])\n"
                "assert d['only_in_baseline'] == ['batch_sweep " + key(base, 64) + "'], d['only_in_baseline']\n"
                "assert d['metrics'][0]['p_value'] is None\n"
                "assert abs(d['geomean_improvement'] - 0.8) < 1e-6\n",
                (dir_ / "c.json").string()};
  const ChildResult r = run_child(check);
  EXPECT_TRUE(r.succeeded()) << r.describe_end() << "\n" << r.output << "\n" << json;
}

// ---------------------------------------------------------------- the redline compare CLI

class CompareCliTest : public CompareRunsTest {
 protected:
  void SetUp() override {
    CompareRunsTest::SetUp();
    ChildSpec help;
    help.argv = {REDLINE_BIN, "compare", "--help"};
    help.timeout_seconds = 60;
    const ChildResult r = run_child(help);
    ASSERT_TRUE(r.succeeded()) << "redline compare --help: " << r.describe_end() << " " << r.output;
  }

  ChildResult compare(std::vector<std::string> args) {
    ChildSpec spec;
    spec.argv = {REDLINE_BIN, "compare"};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.timeout_seconds = 120;
    return run_child(spec);
  }
};

TEST_F(CompareCliTest, ExitStatusFollowsTheVerdicts) {
  const fs::path base = sweep(dir_ / "base.csv", {"--max", "64"}, {});
  const fs::path same = sweep(dir_ / "same.csv", {"--max", "64"}, {});
  const fs::path slow = sweep(dir_ / "slow.csv", {"--max", "64"}, {"--throughput-scale", "0.8"});

  const ChildResult ok = compare({base.string(), same.string()});
  EXPECT_TRUE(ok.started);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_CONTAINS(ok.output, "SAME");

  const ChildResult regressed = compare({base.string(), slow.string()});
  EXPECT_EQ(regressed.exit_code, 1) << regressed.output;
  EXPECT_CONTAINS(regressed.output, "SLOWER");
  EXPECT_CONTAINS(regressed.output, key(base, 64));
  EXPECT_CONTAINS(regressed.output, "samples_per_s");

  // A 20% drop under a 25% threshold is not a regression.
  const ChildResult tolerant = compare({base.string(), slow.string(), "--threshold", "25"});
  EXPECT_EQ(tolerant.exit_code, 0) << tolerant.output;

  const ChildResult json = compare({base.string(), slow.string(), "--format", "json"});
  EXPECT_EQ(json.exit_code, 1) << json.output;
  const auto python = find_executable("python3");
  if (python) {
    write_file(dir_ / "out.json", json.output);
    ChildSpec check;
    check.argv = {*python, "-c", "import json, sys; assert json.load(open(sys.argv[1]))['any_slower']",
                  (dir_ / "out.json").string()};
    const ChildResult r = run_child(check);
    EXPECT_TRUE(r.succeeded()) << r.output << "\n" << json.output;
  }
}

// Every case that ran ok in the baseline fails now: a regression (exit 1),
// not "nothing to compare" (exit 2).
TEST_F(CompareCliTest, EveryCaseFailingNowIsARegression) {
  const std::string header = "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,batch_size,samples_per_s,status,note\n";
  write_file(dir_ / "base.csv", header + "r,2026-01-01T00:00:00Z,h,none,batch_sweep,batch_size=1,0,1,100,ok,\n" +
                                    "r,2026-01-01T00:00:00Z,h,none,batch_sweep,batch_size=2,0,2,200,ok,\n");
  write_file(dir_ / "cur.csv", header + "r,2026-01-01T00:00:00Z,h,none,batch_sweep,batch_size=1,0,1,,oom,\n" +
                                   "r,2026-01-01T00:00:00Z,h,none,batch_sweep,batch_size=2,0,2,,oom,\n");
  const ChildResult r = compare({(dir_ / "base.csv").string(), (dir_ / "cur.csv").string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "no ok row in current: oom");
  EXPECT_NOT_CONTAINS(r.output, "nothing to compare");
}

// A case whose current rows include a wrong repetition beside ok ones is a
// broken result, not a SAME: listed, and exit 1. A failure the baseline's
// rows of that case already had is nothing new.
TEST_F(CompareCliTest, ACaseFailingInPartIsARegression) {
  const std::string header = "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,batch_size,samples_per_s,status,note\n";
  auto rows = [&](const std::vector<std::pair<std::string, std::string>>& reps) {
    std::string text = header;
    for (std::size_t rep = 0; rep < reps.size(); ++rep)
      text += "r,2026-01-01T00:00:00Z,h,none,batch_sweep,batch_size=2," + std::to_string(rep) + ",2," +
              reps[rep].first + "," + reps[rep].second + ",\n";
    return text;
  };
  write_file(dir_ / "base.csv", rows({{"200", "ok"}, {"200", "ok"}, {"200", "ok"}}));
  write_file(dir_ / "cur.csv", rows({{"200", "ok"}, {"", "wrong"}, {"200", "ok"}}));
  const ChildResult r = compare({(dir_ / "base.csv").string(), (dir_ / "cur.csv").string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "failing now in part");
  EXPECT_CONTAINS(r.output, "batch_sweep batch_size=2 (1 of 3 current rows wrong)");
  EXPECT_CONTAINS(line_with(r.output, "samples_per_s"), "SAME");  // the ok rows are still judged

  // The baseline had a wrong row too: not new, so the ok rows decide (exit 0).
  write_file(dir_ / "base_wrong.csv", rows({{"200", "ok"}, {"", "wrong"}, {"200", "ok"}}));
  const ChildResult known = compare({(dir_ / "base_wrong.csv").string(), (dir_ / "cur.csv").string()});
  EXPECT_EQ(known.exit_code, 0) << known.output;
  EXPECT_NOT_CONTAINS(known.output, "failing now in part");

  // A skipped repetition (not run) is no failure.
  write_file(dir_ / "cur_skipped.csv", rows({{"200", "ok"}, {"", "skipped"}, {"200", "ok"}}));
  const ChildResult skipped = compare({(dir_ / "base.csv").string(), (dir_ / "cur_skipped.csv").string()});
  EXPECT_EQ(skipped.exit_code, 0) << skipped.output;
}

// Rows of two runs in one file, or one case and repetition twice, would be
// pooled as repetitions of one measurement: bad input (exit 2) naming the side,
// the file and line.
TEST_F(CompareCliTest, RowsThatAreNotOneRunsAreBadInput) {
  const std::string header = "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,batch_size,samples_per_s,status,note\n";
  auto row = [](const std::string& run, int rep, int value) {
    return run + ",2026-01-01T00:00:00Z,h,none,batch_sweep,batch_size=2," + std::to_string(rep) + ",2," +
           std::to_string(value) + ",ok,\n";
  };
  write_file(dir_ / "base.csv", header + row("r1", 0, 200) + row("r1", 1, 201));
  write_file(dir_ / "two_runs.csv", header + row("r2", 0, 100) + row("r3", 0, 101));
  write_file(dir_ / "twice.csv", header + row("r2", 0, 100) + row("r2", 0, 101));

  const ChildResult two_runs = compare({(dir_ / "base.csv").string(), (dir_ / "two_runs.csv").string()});
  EXPECT_EQ(two_runs.exit_code, 2) << two_runs.output;
  EXPECT_CONTAINS(two_runs.output, "CURRENT '" + (dir_ / "two_runs.csv").string() + "'");
  EXPECT_CONTAINS(two_runs.output, "two_runs.csv:3: rows of two runs in one file (run_id 'r2' at line 2, 'r3' here)");
  const ChildResult twice = compare({(dir_ / "twice.csv").string(), (dir_ / "base.csv").string()});
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_CONTAINS(twice.output, "BASELINE '" + (dir_ / "twice.csv").string() + "'");
  EXPECT_CONTAINS(twice.output, "twice.csv:3: case 'batch_size=2' repetition 0 again (first at line 2)");
}

// redline baseline RUN --dir DIR, and the entries of DIR afterwards.
ChildResult promote(const fs::path& run, const fs::path& dir) {
  ChildSpec spec;
  spec.argv = {REDLINE_BIN, "baseline", run.string(), "--dir", dir.string()};
  spec.timeout_seconds = 60;
  return run_child(spec);
}

std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// Folders it did not create stay (none.new/ and none.old/ were its staging
// names once, and were deleted); odd GPU names stay one folder inside --dir;
// a folder named x.csv is no result; --dir naming a file is bad usage.
TEST_F(CompareCliTest, BaselineTouchesOnlyWhatItCreated) {
  const std::string header = "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,batch_size,samples_per_s,status,note\n";
  fs::create_directories(dir_ / "run" / "x.csv");  // a folder, not results
  write_file(dir_ / "run" / "a.csv", header + "r,2026-01-01T00:00:00Z,h,none,batch_sweep,batch_size=1,0,1,5,ok,\n");
  const fs::path baselines = dir_ / "baselines";
  for (const char* mine : {"none.new", "none.old"}) {
    fs::create_directories(baselines / mine);
    write_file(baselines / mine / "keep.txt", "user content");
  }
  for (int round = 0; round < 2; ++round) {  // a new baseline, then a replaced one
    const ChildResult r = promote(dir_ / "run", baselines);
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  EXPECT_EQ(entries(baselines), (std::set<std::string>{"none", "none.new", "none.old"}));
  EXPECT_EQ(entries(baselines / "none"), std::set<std::string>{"a.csv"});
  EXPECT_EQ(read_all(baselines / "none.new" / "keep.txt"), "user content");
  EXPECT_EQ(read_all(baselines / "none.old" / "keep.txt"), "user content");

  for (const char* gpu : {".", ".."}) {
    const fs::path run = dir_ / (std::string("run") + gpu);
    fs::create_directories(run);
    write_file(run / "a.csv", header + "r,2026-01-01T00:00:00Z,h," + gpu + ",batch_sweep,batch_size=1,0,1,5,ok,\n");
    const fs::path odd = dir_ / (std::string("odd") + gpu);
    const ChildResult r = promote(run, odd);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    ASSERT_EQ(entries(odd).size(), 1u) << r.output;
    EXPECT_EQ(entries(odd / *entries(odd).begin()), std::set<std::string>{"a.csv"});
  }

  write_file(dir_ / "a_file", "not a folder");
  const ChildResult file = promote(dir_ / "run", dir_ / "a_file");
  EXPECT_EQ(file.exit_code, 2) << file.output;
  EXPECT_CONTAINS(file.output, "--dir '" + (dir_ / "a_file").string() + "'");
  EXPECT_EQ(read_all(dir_ / "a_file"), "not a folder");
}

// A run whose suite failed, or stopped part-way, would make its broken or
// missing cases the norm later nights are held to: refused (exit 2, nothing
// written) unless --force.
TEST_F(CompareCliTest, BaselineRefusesARunThatFailedOrStopped) {
  const std::string header = "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,batch_size,samples_per_s,status,note\n";
  const fs::path run = dir_ / "run", baselines = dir_ / "baselines";
  fs::create_directories(run);
  write_file(run / "sweep.csv", header + "r,2026-01-01T00:00:00Z,h,none,batch_sweep,batch_size=1,0,1,5,ok,\n");
  for (const auto& [index, why] : std::vector<std::pair<std::string, std::string>>{
           {"sweep,ok,0,1.0,\ngemm,failed,1,2.0,3 values were wrong\n",
            "suite entry 'gemm' is failed (3 values were wrong)"},
           {"sweep,ok,0,1.0,\ngemm,skipped,-1,0,not run: the suite was interrupted\n", "suite entry 'gemm' is not run"},
           {"sweep,ok,0,1.0,\ngemm,pending,-1,0,not ended yet\n", "suite entry 'gemm' is pending"}}) {
    write_file(run / "suite.csv", "name,status,exit_code,seconds,note\n" + index);
    const ChildResult r = promote(run, baselines);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_CONTAINS(r.output, "RUN '" + run.string() + "'");
    EXPECT_CONTAINS(r.output, why);
    EXPECT_CONTAINS(r.output, "--force");
    EXPECT_FALSE(fs::exists(baselines / "none")) << r.output;
  }
  ChildSpec force;
  force.argv = {REDLINE_BIN, "baseline", run.string(), "--dir", baselines.string(), "--force"};
  const ChildResult forced = run_child(force);
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_TRUE(fs::exists(baselines / "none" / "sweep.csv"));
  // A whole run whose GPU entry skipped (exit 77, no GPU here) is fit.
  write_file(run / "suite.csv", "name,status,exit_code,seconds,note\nsweep,ok,0,1.0,\ngemm,skipped,77,0.1,no GPU\n");
  EXPECT_EQ(promote(run, dir_ / "other").exit_code, 0);
}

// The line of `output` that mentions `what` (empty if none).
std::string line_with(const std::string& output, const std::string& what) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.find(what) != std::string::npos) return line;
  return "";
}

// A build folder carried to another machine: a copy of redline elsewhere, run
// from another folder and, where the kernel lets an unprivileged process
// mount, with the source tree hidden behind an empty folder. The metric
// directions come from the binary, so compare still knows that a rising
// peak_mem_GiB and a falling samples_per_s are both regressions.
TEST_F(CompareCliTest, CarriedBinaryKeepsTheMetricDirections) {
  fs::create_directories(dir_ / "carried");
  fs::create_directories(dir_ / "elsewhere");
  const fs::path redline = dir_ / "carried" / "redline";
  fs::copy_file(REDLINE_BIN, redline);
  const std::string header = "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,batch_size,samples_per_s,"
                             "peak_mem_GiB,status,note\r\n";
  auto write_run = [&](const std::string& name, double samples_per_s, double peak_mem_gib) {
    write_file(dir_ / name, header + "r1,2026-11-22T01:02:03Z,h,none,batch_sweep,batch_size=32,0,32," +
                                std::to_string(samples_per_s) + "," + std::to_string(peak_mem_gib) + ",ok,\r\n");
    return (dir_ / name).string();
  };
  const std::string base = write_run("base.csv", 1000, 10);
  const std::string more_memory = write_run("more_memory.csv", 1000, 12);
  const std::string slower = write_run("slower.csv", 800, 10);
  const std::string better = write_run("better.csv", 1200, 8);

  ChildSpec probe;
  probe.argv = {"unshare", "-rm", "true"};
  const bool can_hide_source = run_child(probe).succeeded();
  auto carried_compare = [&](const std::string& current) {
    ChildSpec spec;
    const std::string compare = "cd \"$1\" && exec \"$2\" compare \"$3\" \"$4\"";
    spec.argv = {"sh", "-c", compare, "sh", (dir_ / "elsewhere").string(), redline.string(), base, current};
    if (can_hide_source)
      spec.argv = {"unshare", "-rm", "sh", "-c", "mount -t tmpfs none \"$0\" && " + compare, SOURCE_DIR,
                   (dir_ / "elsewhere").string(), redline.string(), base, current};
    spec.timeout_seconds = 60;
    return run_child(spec);
  };
  SCOPED_TRACE(can_hide_source ? "source tree hidden" : "source tree visible (unshare -rm not permitted here)");

  const ChildResult memory = carried_compare(more_memory);
  EXPECT_EQ(memory.exit_code, 1) << memory.output;
  EXPECT_CONTAINS(line_with(memory.output, "peak_mem_GiB"), "SLOWER");
  EXPECT_CONTAINS(line_with(memory.output, "samples_per_s"), "SAME");

  const ChildResult throughput = carried_compare(slower);
  EXPECT_EQ(throughput.exit_code, 1) << throughput.output;
  EXPECT_CONTAINS(line_with(throughput.output, "samples_per_s"), "SLOWER");

  const ChildResult improved = carried_compare(better);
  EXPECT_EQ(improved.exit_code, 0) << improved.output;
  EXPECT_CONTAINS(line_with(improved.output, "peak_mem_GiB"), "FASTER");
  EXPECT_CONTAINS(line_with(improved.output, "samples_per_s"), "FASTER");
}

TEST_F(CompareCliTest, MalformedInputExitsTwoNamingFileAndLine) {
  const fs::path base = sweep(dir_ / "base.csv", {"--max", "8"}, {});
  auto lines = csv_lines(base);
  lines.push_back("1,2,3");  // line 6
  write_csv_lines(dir_ / "bad.csv", lines);
  const ChildResult r = compare({base.string(), (dir_ / "bad.csv").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_CONTAINS(r.output, (dir_ / "bad.csv").string() + ":6:");

  const ChildResult missing = compare({base.string(), (dir_ / "nope.csv").string()});
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
}

// Google Benchmark's compare.py on batch_sweep's JSON: two sweeps whose
// trainer prints the same throughput, the second's steps 4x slower in wall
// time or more (its steps sleep 4 ms, its log scales the rate back).
// real_time is the time per sample of the printed metric, so compare.py's
// logic reads no change, whatever the trials' wall time did.
TEST_F(CompareRunsTest, GoogleBenchmarkCompareReadsNoChangeForTheSameMetric) {
  const fs::path a = dir_ / "a.json", b = dir_ / "b.json";
  sweep(dir_ / "a.csv", {"--max", "16", "--repeats", "2", "--json", a.string()}, {});
  sweep(dir_ / "b.csv", {"--max", "16", "--repeats", "2", "--json", b.string()},
        {"--step-ms", "4", "--throughput-scale", "4"});
  std::ifstream in_a(a), in_b(b);
  const auto first = nlohmann::json::parse(in_a), second = nlohmann::json::parse(in_b);
  ASSERT_EQ(first["benchmarks"].size(), 10u);  // 5 batch sizes x 2 repeats
  const auto changes = redline::testing::gbench_compare(first, second);
  ASSERT_EQ(changes.size(), 11u);  // and the geometric mean
  for (const auto& c : changes) {
    EXPECT_NEAR(c.time, 0, 1e-9) << c.name;
    EXPECT_NEAR(c.cpu, 0, 1e-9) << c.name;
  }
  // What it compares is the printed metric: the time per sample, in us.
  for (const auto& run : {first, second})
    for (const auto& bench : run["benchmarks"]) {
      EXPECT_EQ(bench["time_unit"], "us");
      EXPECT_DOUBLE_EQ(bench["real_time"].get<double>(), 1e6 / bench["samples_per_s"].get<double>()) << bench["name"];
    }
}

}  // namespace
