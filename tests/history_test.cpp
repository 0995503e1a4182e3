// results/history.csv: appending runs, reading series back (numbers in keys
// by value), the headline figures read from it as the schema's headlines
// table says, and the trend detection (step, last-run, drift) on planted
// series with fixed pseudo-noise.
#include "harness/tracking/history.hpp"
#include "harness/core/splitmix64.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "harness/core/child_process.hpp"
#include "harness/report/csv_reader.hpp"
#include "harness/report/run_results.hpp"
#include "harness/report/schema.hpp"
#include "harness/tracking/headlines.hpp"
#include "tests/support.hpp"

namespace fs = std::filesystem;
using namespace redline;

namespace {

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

const Schema& schema() {
  static const Schema& s = Schema::compiled_in();
  return s;
}

// Deterministic noise in [-1, 1): splitmix64, the same on every platform.
double noise(std::uint64_t& state) {
  const std::uint64_t z = splitmix64(state);
  state += kSplitMix64Step;
  return static_cast<double>(z >> 11) / static_cast<double>(1ULL << 52) - 1.0;
}

std::string run_name(std::size_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "run-%02zu", i);
  return buf;
}

HistorySeries series_of(const std::string& metric, const std::vector<double>& values) {
  HistorySeries s{"batch_sweep", "batch_size=32", metric, {}};
  for (std::size_t i = 0; i < values.size(); ++i) {
    char stamp[64];
    std::snprintf(stamp, sizeof stamp, "2026-01-%02zuT03:00:00Z", i + 1);
    s.points.push_back({run_name(i), stamp, values[i]});
  }
  return s;
}

// `level(i)` times (1 + pct x noise), seeded so every run of the test sees the same series.
template <typename Level>
std::vector<double> planted(std::size_t n, double noise_pct, std::uint64_t seed, Level level) {
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(level(i) * (1 + noise_pct / 100 * noise(seed)));
  return v;
}

ResultRow row(const std::string& run_id, const std::string& stamp, const std::string& case_key, int repetition,
              std::map<std::string, double> metrics, const std::string& status = "ok") {
  ResultRow r;
  r.run_id = run_id;
  r.timestamp_utc = stamp;
  r.host = "node1";
  r.gpu = "none";
  r.tool = "batch_sweep";
  r.case_key = case_key;
  r.repetition = repetition;
  r.status = *parse_row_status(status);
  r.metrics = std::move(metrics);
  return r;
}

}  // namespace

TEST(History, AppendWritesTheHeaderOnceAndOnlyOkValues) {
  const redline::testing::TempDir temp("history_test_append");
  const fs::path& dir = temp.path();
  const fs::path file = dir / "sub" / "history.csv";
  RunResults run;
  run.rows.push_back(row("r1", "2026-01-01T00:00:00Z", "batch_size=8", 0, {{"samples_per_s", 123.25}, {"step_time_ms", 7}}));
  run.rows.push_back(row("r1", "2026-01-01T00:00:00Z", "batch_size=8", 1, {{"samples_per_s", 0.1}}));
  run.rows.push_back(row("r1", "2026-01-01T00:00:00Z", "batch_size=256", 0, {}, "oom"));
  run.rows.push_back(row("r1", "2026-01-01T00:00:00Z", "batch_size=9", 0, {{"samples_per_s", NAN}}));
  append_history(file, run);

  CsvTable t = read_csv(file);
  EXPECT_EQ(t.header, (std::vector<std::string>{"run_id", "timestamp_utc", "host", "gpu", "tool", "case_key",
                                                "repetition", "metric", "value", "status"}));
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.value(0, "metric"), "samples_per_s");
  EXPECT_EQ(t.value(0, "value"), "123.25");
  EXPECT_EQ(t.value(1, "metric"), "step_time_ms");
  EXPECT_EQ(t.value(2, "repetition"), "1");
  EXPECT_EQ(t.value(2, "value"), "0.1");
  EXPECT_EQ(t.value(2, "status"), "ok");

  run.rows[0].run_id = run.rows[1].run_id = "r2";
  append_history(file, run);
  const std::string text = slurp(file);
  EXPECT_EQ(count_of(text, "run_id,timestamp_utc"), 1u);
  EXPECT_EQ(read_csv(file).rows.size(), 6u);

  // Nothing to add leaves the file alone (and does not create one).
  RunResults failed;
  failed.rows.push_back(row("r3", "2026-01-03T00:00:00Z", "batch_size=8", 0, {}, "error"));
  append_history(dir / "none.csv", failed);
  EXPECT_FALSE(fs::exists(dir / "none.csv"));
}

TEST(History, AppendRefusesAFileWithAnotherHeader) {
  const redline::testing::TempDir temp("history_test_foreign");
  const fs::path& dir = temp.path();
  std::ofstream(dir / "history.csv") << "a,b\r\n1,2\r\n";
  RunResults run;
  run.rows.push_back(row("r1", "2026-01-01T00:00:00Z", "batch_size=8", 0, {{"samples_per_s", 1}}));
  try {
    append_history(dir / "history.csv", run);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_CONTAINS(e.what(), "history.csv:1:");
  }
  EXPECT_EQ(slurp(dir / "history.csv"), "a,b\r\n1,2\r\n");
}

TEST(History, LoadGroupsSeriesTakesRunMediansAndOrdersByTime) {
  const redline::testing::TempDir temp("history_test_load");
  const fs::path& dir = temp.path();
  const fs::path file = dir / "history.csv";
  // Appended out of time order; run "b" has three repetitions.
  RunResults late, early;
  late.rows.push_back(row("b", "2026-01-02T00:00:00Z", "batch_size=8", 0, {{"samples_per_s", 10}, {"step_time_ms", 3}}));
  late.rows.push_back(row("b", "2026-01-02T00:00:00Z", "batch_size=8", 1, {{"samples_per_s", 30}}));
  late.rows.push_back(row("b", "2026-01-02T00:00:00Z", "batch_size=8", 2, {{"samples_per_s", 11}}));
  late.rows.push_back(row("b", "2026-01-02T00:00:00Z", "batch_size=16", 0, {{"samples_per_s", 40}}));
  early.rows.push_back(row("a", "2026-01-01T00:00:00Z", "batch_size=8", 0, {{"samples_per_s", 9}}));
  append_history(file, late);
  append_history(file, early);

  const auto all = load_history(file);
  ASSERT_EQ(all.size(), 3u);  // (batch_size=16, samples), (batch_size=8, samples), (batch_size=8, step_time)
  const auto only = load_history(file, "size=8", "samples");
  ASSERT_EQ(only.size(), 1u);
  const HistorySeries& s = only[0];
  EXPECT_EQ(s.tool, "batch_sweep");
  EXPECT_EQ(s.case_key, "batch_size=8");
  EXPECT_EQ(s.metric, "samples_per_s");
  ASSERT_EQ(s.points.size(), 2u);
  EXPECT_EQ(s.points[0].run_id, "a");
  EXPECT_EQ(s.points[0].timestamp_utc, "2026-01-01T00:00:00Z");
  EXPECT_DOUBLE_EQ(s.points[0].value, 9);
  EXPECT_EQ(s.points[1].run_id, "b");
  EXPECT_DOUBLE_EQ(s.points[1].value, 11);  // median of 10, 30, 11
  EXPECT_TRUE(load_history(file, "batch_size=99").empty());
}

TEST(NaturalOrder, NumbersReadAsNumbers) {
  EXPECT_TRUE(natural_less("batch_size=2", "batch_size=16"));
  EXPECT_TRUE(natural_less("batch_size=16", "batch_size=100"));
  EXPECT_FALSE(natural_less("batch_size=100", "batch_size=16"));
  EXPECT_TRUE(natural_less("bytes=1024;dtype=float", "bytes=1024;dtype=half"));
  EXPECT_TRUE(natural_less("m=4096;n=8", "m=4096;n=10"));
  EXPECT_TRUE(natural_less("x=0.25", "x=0.5"));
  EXPECT_TRUE(natural_less("x=0.5", "x=0.55"));
  EXPECT_TRUE(natural_less("x=0.5;y=1", "x=0.55;y=1"));
  EXPECT_FALSE(natural_less("x=0.55;y=1", "x=0.5;y=1"));
  EXPECT_TRUE(natural_less("x=1.5", "x=10"));
  EXPECT_TRUE(natural_less("a", "a=1"));  // a prefix first
  EXPECT_FALSE(natural_less("batch_size=8", "batch_size=8"));
  // A strict weak order: 08 and 8 are equal as numbers but still ordered, one way.
  EXPECT_NE(natural_less("n=08", "n=8"), natural_less("n=8", "n=08"));
}

TEST(History, SeriesOrderNumbersByValue) {
  const redline::testing::TempDir temp("history_test_order");
  const fs::path file = temp / "history.csv";
  RunResults run;
  for (const char* bs : {"1", "100", "16", "2"})
    run.rows.push_back(row("a", "2026-01-01T00:00:00Z", std::string("batch_size=") + bs, 0, {{"samples_per_s", 1}}));
  append_history(file, run);
  std::vector<std::string> keys;
  for (const auto& s : load_history(file)) keys.push_back(s.case_key);
  EXPECT_EQ(keys, (std::vector<std::string>{"batch_size=1", "batch_size=2", "batch_size=16", "batch_size=100"}));
}

TEST(History, LoadSkipsRowsThatAreNotOkAndNamesTheLineOfABadValue) {
  const redline::testing::TempDir temp("history_test_bad");
  const fs::path& dir = temp.path();
  const std::string header = "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,metric,value,status\r\n";
  std::ofstream(dir / "h.csv") << header << "a,2026-01-01T00:00:00Z,h,none,t,k=1,0,m_per_s,5,ok\r\n"
                               << "a,2026-01-01T00:00:00Z,h,none,t,k=1,0,m_per_s,,error\r\n"
                               << "b,2026-01-02T00:00:00Z,h,none,t,k=1,0,m_per_s,7,ok\r\n";
  const auto series = load_history(dir / "h.csv");
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].points.size(), 2u);

  std::ofstream(dir / "bad.csv") << header << "a,2026-01-01T00:00:00Z,h,none,t,k=1,0,m_per_s,5,ok\r\n"
                                 << "b,2026-01-02T00:00:00Z,h,none,t,k=1,0,m_per_s,fast,ok\r\n";
  try {
    load_history(dir / "bad.csv");
    FAIL() << "expected an error";
  } catch (const CsvError& e) {
    EXPECT_EQ(e.line(), 3u);
    EXPECT_CONTAINS(e.what(), "bad.csv:3:");
  }
  std::ofstream(dir / "other.csv") << "x,y\r\n1,2\r\n";
  EXPECT_THROW(load_history(dir / "other.csv"), std::runtime_error);
}

// `redline history` on a file that holds no values yet names the file, not
// filters the user never gave; with filters, it names them.
TEST(HistoryCli, AFileWithoutValuesNamesTheFile) {
  const redline::testing::TempDir temp("history_cli_empty");
  const fs::path file = temp.path() / "history.csv";
  std::ofstream(file, std::ios::binary) << "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,metric,value,status\r\n";
  auto history = [&](std::vector<std::string> args) {
    ChildSpec spec;
    spec.argv = {REDLINE_BIN, "history", "--file", file.string()};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.timeout_seconds = 60;
    return run_child(spec);
  };
  const ChildResult bare = history({});
  EXPECT_EQ(bare.exit_code, 2) << bare.output;
  EXPECT_CONTAINS(bare.output, "--file '" + file.string() + "': holds no ok values yet");
  EXPECT_NOT_CONTAINS(bare.output, "--case");
  const ChildResult filtered = history({"--metric", "busbw"});
  EXPECT_EQ(filtered.exit_code, 2) << filtered.output;
  EXPECT_CONTAINS(filtered.output, "--case/--metric '/busbw': match no series");
}

TEST(Trends, AStepOfMinus20PercentIsFoundAtTheFirstRunOfTheNewLevel) {
  const auto v = planted(20, 1.0, 42, [](std::size_t i) { return i < 10 ? 1000.0 : 800.0; });
  const auto findings = detect_trends(series_of("samples_per_s", v), schema(), 0.05);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "step");
  EXPECT_EQ(findings[0].run_id, "run-10");
  EXPECT_NEAR(findings[0].before, 1000, 15);
  EXPECT_NEAR(findings[0].after, 800, 12);
  EXPECT_NEAR(findings[0].change, -0.2, 0.02);
  EXPECT_TRUE(findings[0].worse);  // higher is better
}

TEST(Trends, LowerBetterMetricsFlipTheDirection) {
  const auto slower = planted(20, 1.0, 7, [](std::size_t i) { return i < 10 ? 50.0 : 60.0; });
  auto findings = detect_trends(series_of("time_us", slower), schema(), 0.05);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "step");
  EXPECT_EQ(findings[0].run_id, "run-10");
  EXPECT_GT(findings[0].change, 0);
  EXPECT_TRUE(findings[0].worse);  // the time went up

  const auto faster = planted(20, 1.0, 7, [](std::size_t i) { return i < 10 ? 60.0 : 50.0; });
  findings = detect_trends(series_of("time_us", faster), schema(), 0.05);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_FALSE(findings[0].worse);
  // The same drop in a higher-better metric is a regression.
  findings = detect_trends(series_of("busbw_GBps", faster), schema(), 0.05);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_TRUE(findings[0].worse);
  // A metric the schema lacks has no direction: reported, never worse.
  findings = detect_trends(series_of("mystery_count", faster), schema(), 0.05);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_FALSE(findings[0].worse);
}

TEST(Trends, AOneNightDropOnTheLastRunIsALastRunFinding) {
  auto v = planted(20, 1.0, 3, [](std::size_t) { return 500.0; });
  v.back() = 400;
  const auto findings = detect_trends(series_of("samples_per_s", v), schema(), 0.05);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "last-run");
  EXPECT_EQ(findings[0].run_id, "run-19");
  EXPECT_DOUBLE_EQ(findings[0].after, 400);
  EXPECT_NEAR(findings[0].change, -0.2, 0.02);
  EXPECT_TRUE(findings[0].worse);
}

TEST(Trends, AFlatNoisySeriesHasNoFindings) {
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    const auto v = planted(30, 2.0, seed, [](std::size_t) { return 250.0; });
    EXPECT_TRUE(detect_trends(series_of("samples_per_s", v), schema(), 0.05).empty()) << "seed " << seed;
  }
}

TEST(Trends, ASlowLinearDriftIsADriftNotAStep) {
  // 1% of the first level lost per run over 20 runs, with +-0.3% noise: no
  // single boundary explains it (a straight line fits better than two levels).
  const auto v = planted(20, 0.3, 11, [](std::size_t i) { return 1000.0 * (1 - 0.01 * static_cast<double>(i)); });
  const auto findings = detect_trends(series_of("samples_per_s", v), schema(), 0.05);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "drift");
  EXPECT_EQ(findings[0].run_id, "run-19");
  EXPECT_NEAR(findings[0].before, 975, 10);  // median of runs 0-5
  EXPECT_NEAR(findings[0].after, 835, 10);   // median of runs 14-19
  EXPECT_TRUE(findings[0].worse);
}

TEST(Trends, ARegressionAndItsLaterFixAreTwoSteps) {
  const auto v = planted(25, 1.0, 5, [](std::size_t i) { return i >= 10 && i < 15 ? 80.0 : 100.0; });
  const auto findings = detect_trends(series_of("samples_per_s", v), schema(), 0.05);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].kind, "step");
  EXPECT_EQ(findings[0].run_id, "run-10");
  EXPECT_TRUE(findings[0].worse);
  EXPECT_EQ(findings[1].kind, "step");
  EXPECT_EQ(findings[1].run_id, "run-15");
  EXPECT_FALSE(findings[1].worse);
}

TEST(Trends, AThreeNightRegressionFixedLaterIsTwoSteps) {
  // Three nights at 80 between levels of 100: the 7-run window after run 10
  // holds 3 runs at 80 and 4 back at 100 (a median of 100), so the full
  // window alone missed it. The narrower window finds both boundaries.
  const auto v = planted(23, 1.0, 5, [](std::size_t i) { return i >= 10 && i < 13 ? 80.0 : 100.0; });
  const auto findings = detect_trends(series_of("samples_per_s", v), schema(), 0.05);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].kind, "step");
  EXPECT_EQ(findings[0].run_id, "run-10");
  EXPECT_NEAR(findings[0].after, 80, 1.5);
  EXPECT_TRUE(findings[0].worse);
  EXPECT_EQ(findings[1].kind, "step");
  EXPECT_EQ(findings[1].run_id, "run-13");
  EXPECT_FALSE(findings[1].worse);
}

TEST(Trends, TwoBadNightsAreNoStep) {
  // A median of 3 would take two nights at 80 as a level; a step needs 3.
  const auto v = planted(23, 1.0, 5, [](std::size_t i) { return i >= 10 && i < 12 ? 80.0 : 100.0; });
  EXPECT_TRUE(detect_trends(series_of("samples_per_s", v), schema(), 0.05).empty());
  // Near the series' end too, where the end cuts the window: 80 80 100 (and
  // 80 80 100 100, a level of 90 that never was) after ten nights at 100.
  for (std::size_t n : {13, 14}) {
    const auto tail = planted(n, 1.0, 5, [](std::size_t i) { return i >= 10 && i < 12 ? 80.0 : 100.0; });
    for (const auto& f : detect_trends(series_of("samples_per_s", tail), schema(), 0.05))
      EXPECT_NE(f.kind, "step") << n << " runs: " << f.run_id << " " << f.before << " -> " << f.after;
  }
}

TEST(Trends, AChangeBelowTheThresholdOrInsideTheNoiseIsNotFlagged) {
  // A 3% step is under the 5% threshold; with a 2% threshold it is found.
  const auto small = planted(20, 0.2, 9, [](std::size_t i) { return i < 10 ? 100.0 : 97.0; });
  EXPECT_TRUE(detect_trends(series_of("samples_per_s", small), schema(), 0.05).empty());
  const auto found = detect_trends(series_of("samples_per_s", small), schema(), 0.02);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].run_id, "run-10");
  // A series whose runs scatter by +-15% moves its medians by more than 5%
  // now and then: that is noise, not a finding.
  const auto noisy = planted(30, 15.0, 9, [](std::size_t) { return 100.0; });
  EXPECT_TRUE(detect_trends(series_of("samples_per_s", noisy), schema(), 0.05).empty());
}

TEST(Trends, ANewLevelTooRecentForAStepIsALastRunFinding) {
  // Two runs at the new level: not yet a step (that needs three), and never a
  // step placed one run early; the last run is judged against the week before.
  const auto v = planted(20, 1.0, 13, [](std::size_t i) { return i < 18 ? 100.0 : 80.0; });
  const auto findings = detect_trends(series_of("samples_per_s", v), schema(), 0.05);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "last-run");
  EXPECT_EQ(findings[0].run_id, "run-19");
}

TEST(Trends, OnADriftTheLastRunIsJudgedAgainstTheDriftsLine) {
  // A bad night at the end of a drift is both; the drift alone is only a drift.
  auto v = planted(20, 0.3, 17, [](std::size_t i) { return 1000.0 * (1 - 0.01 * static_cast<double>(i)); });
  v.back() *= 0.85;
  const auto findings = detect_trends(series_of("samples_per_s", v), schema(), 0.05);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].kind, "last-run");
  EXPECT_NEAR(findings[0].before, 810, 10);  // where the line puts run 19
  EXPECT_NEAR(findings[0].change, -0.15, 0.02);
  EXPECT_EQ(findings[1].kind, "drift");
}

TEST(Trends, ShortSeriesAreJudgedOnTheLastRunOnly) {
  EXPECT_TRUE(detect_trends(series_of("samples_per_s", {}), schema()).empty());
  EXPECT_TRUE(detect_trends(series_of("samples_per_s", {100}), schema()).empty());
  auto findings = detect_trends(series_of("samples_per_s", {100, 70}), schema());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "last-run");
  EXPECT_EQ(findings[0].run_id, "run-01");
  EXPECT_TRUE(findings[0].worse);
  EXPECT_TRUE(detect_trends(series_of("samples_per_s", {100, 102, 99}), schema()).empty());
  findings = detect_trends(series_of("samples_per_s", {100, 101, 99, 130}), schema());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "last-run");
  EXPECT_FALSE(findings[0].worse);
  // A zero level has no relative change.
  EXPECT_TRUE(detect_trends(series_of("wrong", {0, 0, 0, 5}), schema()).empty());
}

// ---------------------------------------------------------------- headlines

namespace {

// A series of one tool and case: one value per run, runs r1, r2, ... a day apart.
HistorySeries history_of(const std::string& tool, const std::string& case_key, const std::string& metric,
                         const std::vector<double>& values) {
  HistorySeries s{tool, case_key, metric, {}};
  for (std::size_t i = 0; i < values.size(); ++i) {
    char stamp[64];
    std::snprintf(stamp, sizeof stamp, "2026-02-%02zuT03:00:00Z", i + 1);
    s.points.push_back({"r" + std::to_string(i + 1), stamp, values[i]});
  }
  return s;
}

std::vector<double> values_of(const HistorySeries& s) {
  std::vector<double> v;
  for (const auto& p : s.points) v.push_back(p.value);
  return v;
}

const HeadlineChart* find_chart(const std::vector<HeadlineChart>& charts, const std::string& tool,
                                const std::string& figure) {
  for (const auto& c : charts)
    if (c.tool == tool && c.figure == figure) return &c;
  return nullptr;
}

}  // namespace

TEST(Headlines, BatchSweepBestThroughputAndSaturationBatchOneChartEach) {
  // Nine batch sizes, three runs: saturation at 32 in runs 1 and 2, at 64 in run 3 (a faster 64).
  std::vector<HistorySeries> history;
  for (int bs = 1; bs <= 256; bs *= 2) {
    const double level = 100.0 * std::min(bs, 32);
    history.push_back(history_of("batch_sweep[sweep]", "batch_size=" + std::to_string(bs), "samples_per_s",
                                 {level, level * 1.01, bs >= 64 ? 6400.0 : level}));
    history.push_back(history_of("batch_sweep[sweep]", "batch_size=" + std::to_string(bs), "step_time_ms", {1, 1, 1}));
  }
  const auto charts = headline_history(history, schema());
  ASSERT_EQ(charts.size(), 2u);  // not one chart per batch size
  const HeadlineChart* best = find_chart(charts, "batch_sweep[sweep]", "best throughput");
  ASSERT_TRUE(best);
  EXPECT_EQ(best->y_label, "samples_per_s (samples/s)");
  ASSERT_EQ(best->lines.size(), 1u);
  EXPECT_EQ(best->lines[0].case_key, "");  // nothing but the batch size in the key
  EXPECT_EQ(best->lines[0].metric, "samples_per_s");
  EXPECT_EQ(values_of(best->lines[0]), (std::vector<double>{3200, 3232, 6400}));
  EXPECT_EQ(best->lines[0].points[2].run_id, "r3");
  const HeadlineChart* saturation = find_chart(charts, "batch_sweep[sweep]", "saturation batch");
  ASSERT_TRUE(saturation);
  EXPECT_EQ(saturation->y_label, "batch_size");
  ASSERT_EQ(saturation->lines.size(), 1u);
  EXPECT_EQ(saturation->lines[0].metric, "batch_size");
  EXPECT_EQ(values_of(saturation->lines[0]), (std::vector<double>{32, 32, 64}));
}

TEST(Headlines, ALinePerCaseWithoutTheSweptParameter) {
  // Two configurations of one trainer sweep: a line each.
  std::vector<HistorySeries> history;
  for (int bs = 8; bs <= 64; bs *= 2)
    for (const char* seq : {"512", "1024"})
      history.push_back(history_of("batch_sweep", "batch_size=" + std::to_string(bs) + ";seq=" + seq, "tokens_per_s",
                                   {bs * (seq[0] == '5' ? 2.0 : 1.0)}));
  const auto charts = headline_history(history, schema());
  const HeadlineChart* best = find_chart(charts, "batch_sweep", "best throughput");
  ASSERT_TRUE(best);
  ASSERT_EQ(best->lines.size(), 2u);
  EXPECT_EQ(best->lines[0].case_key, "seq=512");  // numbers by value: 512 before 1024
  EXPECT_EQ(best->lines[1].case_key, "seq=1024");
  EXPECT_EQ(values_of(best->lines[0]), (std::vector<double>{128}));
  EXPECT_EQ(best->y_label, "tokens_per_s (tokens/s)");
}

TEST(Headlines, PeakBusbwPerCollectiveOverSizesAndLayouts) {
  std::vector<HistorySeries> history;
  for (const char* collective : {"all_reduce", "broadcast"})
    for (int kib = 1; kib <= 64; kib *= 4)
      for (const char* inplace : {"0", "1"}) {
        const std::string key = std::string("collective=") + collective + ";bytes=" + std::to_string(kib * 1024) +
                                ";count=" + std::to_string(kib * 256) + ";dtype=float;op=sum;root=-1;inplace=" + inplace;
        const double busbw = kib * (inplace[0] == '1' ? 1.5 : 1.0) * (collective[0] == 'a' ? 1 : 2);
        history.push_back(history_of("allreduce_bench[allreduce_host]", key, "busbw_GBps", {busbw, busbw / 2}));
        history.push_back(history_of("allreduce_bench[allreduce_host]", key, "time_us", {1, 1}));
      }
  const auto charts = headline_history(history, schema());
  ASSERT_EQ(charts.size(), 1u);
  const HeadlineChart& peak = charts[0];
  EXPECT_EQ(peak.figure, "peak busbw");
  EXPECT_EQ(peak.y_label, "busbw_GBps (GB/s)");
  ASSERT_EQ(peak.lines.size(), 2u);  // count and inplace split nothing
  EXPECT_EQ(peak.lines[0].case_key, "collective=all_reduce;dtype=float;op=sum;root=-1");
  EXPECT_EQ(values_of(peak.lines[0]), (std::vector<double>{96, 48}));  // 64 KiB in place: 64 x 1.5
  EXPECT_EQ(values_of(peak.lines[1]), (std::vector<double>{192, 96}));
}

TEST(Headlines, MamfPerDtypeFromTheRowsTheToolWrote) {
  std::vector<HistorySeries> history = {
      history_of("gemm_bench", "dtype=fp8;layout=TN;result=mamf", "tflops", {1500, 1490}),
      history_of("gemm_bench", "dtype=bf16;layout=TN;result=mamf", "tflops", {750, 760}),
      history_of("gemm_bench", "dtype=bf16;layout=TN;m=8192;n=8192;k=8192", "tflops", {740, 745}),
      history_of("gemm_bench", "dtype=bf16;layout=TN;result=mamf_exhaustive", "tflops", {770, 770}),
  };
  const auto charts = headline_history(history, schema());
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0].figure, "MAMF");
  ASSERT_EQ(charts[0].lines.size(), 2u);
  EXPECT_EQ(charts[0].lines[0].case_key, "dtype=bf16;layout=TN");
  EXPECT_EQ(values_of(charts[0].lines[0]), (std::vector<double>{750, 760}));
  EXPECT_EQ(charts[0].lines[1].case_key, "dtype=fp8;layout=TN");
}

TEST(Headlines, AToolWithoutHeadlinesGetsItsTrackedMetricsPerCase) {
  std::vector<HistorySeries> history = {
      history_of("my_tool", "n=16", "items_per_s", {10, 11}), history_of("my_tool", "n=2", "items_per_s", {5, 5}),
      history_of("my_tool", "n=2", "time_us", {1, 1}),  // not tracked
  };
  const auto charts = headline_history(history, schema());
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0].figure, "items_per_s");
  ASSERT_EQ(charts[0].lines.size(), 2u);
  EXPECT_EQ(charts[0].lines[0].case_key, "n=2");
  EXPECT_EQ(charts[0].lines[1].case_key, "n=16");
}

TEST(Headlines, BestFollowsTheMetricsDirection) {
  const Schema custom = Schema::parse(
      "## Metrics\n\n| metric | unit | better | tracked |\n|---|---|---|---|\n| `step_ms` | ms | lower | yes |\n\n"
      "## Charts\n\n| tool | x | x scale | metric | prediction | series | series labels | not grouping |\n"
      "|---|---|---|---|---|---|---|---|\n| `t` | `n` | auto | `step_ms` | - | - | - | - |\n\n"
      "## Headlines\n\n| tool | figure | metric | from | rows |\n|---|---|---|---|---|\n"
      "| `t` | fastest step | `step_ms` | best | - |\n",
      "test");
  const std::vector<HistorySeries> history = {history_of("t", "n=1", "step_ms", {5, 6}),
                                              history_of("t", "n=2", "step_ms", {3, 7})};
  const auto charts = headline_history(history, custom);
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0].figure, "fastest step");
  EXPECT_EQ(values_of(charts[0].lines.at(0)), (std::vector<double>{3, 6}));  // the lowest time per run
}

TEST(Headlines, SchemaRowsAreChecked) {
  const std::string head =
      "## Metrics\n\n| metric | unit | better | tracked |\n|---|---|---|---|\n| `x_per_s` | 1/s | higher | yes |\n\n"
      "## Charts\n\n| tool | x | x scale | metric | prediction | series | series labels | not grouping |\n"
      "|---|---|---|---|---|---|---|---|\n| `t` | `n` | auto | `x_per_s` | - | - | - | - |\n\n"
      "## Headlines\n\n| tool | figure | metric | from | rows |\n|---|---|---|---|---|\n";
  const Schema ok = Schema::parse(head + "| `t` | best | `x_per_s` | best | `kind=a` |\n", "test");
  ASSERT_EQ(ok.headlines("t").size(), 1u);
  EXPECT_EQ(ok.headlines("t")[0].where_param, "kind");
  EXPECT_EQ(ok.headlines("t")[0].where_value, "a");
  EXPECT_TRUE(ok.headlines("u").empty());
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"| `t` | best | `x_per_s` | most | - |", "from is \"most\""},
      {"| `t` | best | `x_per_s` | best | kind |", "rows \"kind\" is not PARAMETER=VALUE"},
      {"| `u` | best | `x_per_s` | saturation | - |", "the tool has no charts row"},
      {"| `t` | - | `x_per_s` | best | - |", "without a figure"},
  };
  for (const auto& [line, message] : bad) {
    try {
      Schema::parse(head + line + "\n", "test");
      ADD_FAILURE() << line << " was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_CONTAINS(e.what(), message);
      EXPECT_CONTAINS(e.what(), "test:17:");
    }
  }
}

