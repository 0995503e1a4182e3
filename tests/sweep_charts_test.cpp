// Sweep charts: planned from the schema's chart hints (a tool's row of the
// charts table, else the generic plan), the same from a tool's own report as
// from its CSV read back, and written by the real batch_sweep into its JSON
// exactly as `redline report` computes them from its CSV.
#include "harness/tracking/sweep_charts.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/core/atomic_file.hpp"
#include "harness/core/child_process.hpp"
#include "harness/report/csv_writer.hpp"
#include "harness/report/run_results.hpp"
#include "tests/support.hpp"

namespace fs = std::filesystem;
using namespace redline;

namespace {

std::vector<const ResultRow*> all_rows(const RunResults& results) {
  std::vector<const ResultRow*> rows;
  for (const auto& row : results.rows) rows.push_back(&row);
  return rows;
}

void expect_same_charts(const std::vector<SweepChart>& a, const std::vector<SweepChart>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].title + " / " + a[i].metric);
    EXPECT_EQ(a[i].title, b[i].title);
    EXPECT_EQ(a[i].x, b[i].x);
    EXPECT_EQ(a[i].log_x, b[i].log_x);
    EXPECT_EQ(a[i].x_label, b[i].x_label);
    EXPECT_EQ(a[i].metric, b[i].metric);
    EXPECT_EQ(a[i].unit, b[i].unit);
    EXPECT_EQ(a[i].y_label, b[i].y_label);
    ASSERT_EQ(a[i].series.size(), b[i].series.size());
    for (std::size_t s = 0; s < a[i].series.size(); ++s) {
      EXPECT_EQ(a[i].series[s].name, b[i].series[s].name);
      EXPECT_EQ(a[i].series[s].points, b[i].series[s].points);
      EXPECT_EQ(a[i].series[s].dashed, b[i].series[s].dashed);
    }
    ASSERT_EQ(a[i].markers.size(), b[i].markers.size());
    for (std::size_t m = 0; m < a[i].markers.size(); ++m) {
      EXPECT_EQ(a[i].markers[m].x, b[i].markers[m].x);
      EXPECT_EQ(a[i].markers[m].y, b[i].markers[m].y);
      EXPECT_EQ(a[i].markers[m].label, b[i].markers[m].label);
    }
    EXPECT_EQ(a[i].findings, b[i].findings);
  }
}

// A made-up tool: `size` doubles, two modes, a retry count that does not
// follow size, a throughput that saturates at 16, repetitions, a failed row.
Report made_up_report() {
  Report report;
  report.tool = "my_sweeper";
  report.run_id = "20261122T010203Z-node1-42";
  for (int size = 1; size <= 64; size *= 2)
    for (const std::string mode : {"0", "1"})
      for (int rep = 0; rep < 2; ++rep) {
        Row row;
        row.param("size", std::to_string(size)).param("mode", mode).param("attempt", std::to_string((size + rep) % 3));
        row.metric("items_per_s", 100.0 * std::min(size, 16) + (mode == "1" ? 7 : 0) + rep / 3.0);
        row.metric("time_ms", 1.0 / size);
        row.repetition = rep;
        report.rows.push_back(row);
      }
  Row failed;
  failed.param("size", "128").param("mode", "0").param("attempt", "0");
  failed.metric("items_per_s", std::nan("")).metric("time_ms", std::nan(""));
  failed.status = RowStatus::oom;
  report.rows.push_back(failed);
  return report;
}

// The compiled-in schema with a charts row for my_sweeper.
Schema schema_with_my_sweeper() {
  return Schema::parse(
      "## Metrics\n\n| metric | unit | better | tracked |\n|---|---|---|---|\n"
      "| `*_per_s` | 1/s | higher | yes |\n| `time_ms` | ms | lower | no |\n\n"
      "## Charts\n\n| tool | x | x scale | metric | prediction | series | series labels | not grouping |\n"
      "|---|---|---|---|---|---|---|---|\n"
      "| `my_sweeper` | `size` | log2 | `*_per_s` | - | `mode` | 0=cold, 1=warm | `attempt` |\n",
      "test schema");
}

// A chart whose x is no size to saturate along (a profile's steps): its
// curves without saturation markers or findings; the oom row still marks
// the memory limit.
TEST(SweepCharts, ATimelineHasNoSaturationPoint) {
  Report report = made_up_report();
  const Schema schema = Schema::parse(
      "## Metrics\n\n| metric | unit | better | tracked |\n|---|---|---|---|\n"
      "| `*_per_s` | 1/s | higher | yes |\n\n"
      "## Charts\n\n| tool | x | x scale | metric | prediction | series | series labels | not grouping | saturation |\n"
      "|---|---|---|---|---|---|---|---|---|\n"
      "| `my_sweeper` | `size` | log2 | `*_per_s` | - | `mode` | - | `attempt` | no |\n",
      "test schema");
  add_sweep_charts(report, schema);
  ASSERT_TRUE(report.charts);
  ASSERT_EQ(report.charts->size(), 1u);
  const SweepChart& chart = report.charts->front();
  EXPECT_EQ(chart.series.size(), 2u);
  for (const auto& marker : chart.markers) EXPECT_EQ(marker.label.find("saturation"), std::string::npos) << marker.label;
  for (const auto& finding : chart.findings) EXPECT_EQ(finding.find("saturation"), std::string::npos) << finding;
  EXPECT_THROW(Schema::parse("## Metrics\n\n| metric | unit | better | tracked |\n|---|---|---|---|\n"
                             "| `a_ms` | ms | lower | no |\n\n## Charts\n\n| tool | x | x scale | metric | prediction "
                             "| series | series labels | not grouping | saturation |\n|---|---|---|---|---|---|---|---|---|\n"
                             "| `t` | `size` | log2 | `a_ms` | - | - | - | - | maybe |\n",
                             "bad.md"),
               std::runtime_error);
}

TEST(SweepCharts, PlannedFromTheToolsChartHints) {
  Report report = made_up_report();
  add_sweep_charts(report, schema_with_my_sweeper());
  ASSERT_TRUE(report.charts);
  ASSERT_EQ(report.charts->size(), 1u);  // attempt groups nothing; the modes are series
  const SweepChart& chart = report.charts->front();
  EXPECT_EQ(chart.title, "my_sweeper");
  EXPECT_EQ(chart.x, "size");
  EXPECT_TRUE(chart.log_x);
  EXPECT_EQ(chart.x_label, "size (log2 scale)");
  EXPECT_EQ(chart.metric, "items_per_s");
  EXPECT_EQ(chart.y_label, "items_per_s (1/s)");
  ASSERT_EQ(chart.series.size(), 2u);
  EXPECT_EQ(chart.series[0].name, "cold");
  EXPECT_EQ(chart.series[1].name, "warm");
  ASSERT_EQ(chart.series[0].points.size(), 7u);  // sizes 1..64: the oom row is not charted
  EXPECT_EQ(chart.series[0].points[4].first, 16);
  EXPECT_DOUBLE_EQ(chart.series[0].points[4].second, (1600 + (1600 + 1 / 3.0)) / 2);  // the median of 2 repeats
  // The first series carries the saturation marker: nothing past 16 gains
  // 5%, and 16 is at 90% of the best, so one marker. Then the memory limit:
  // 64 ran, 128 ran out of memory (on the x axis: nothing measured there).
  ASSERT_EQ(chart.markers.size(), 3u);
  EXPECT_EQ(chart.markers[0].x, 16);
  EXPECT_EQ(chart.markers[0].label, "saturation: size 16");
  EXPECT_EQ(chart.markers[1].x, 64);
  EXPECT_EQ(chart.markers[1].y, chart.series[0].points.back().second);
  EXPECT_EQ(chart.markers[1].label, "max feasible: size 64");
  EXPECT_EQ(chart.markers[2].x, 128);
  EXPECT_EQ(chart.markers[2].y, 0);
  EXPECT_EQ(chart.markers[2].label, "first OOM: size 128");
  ASSERT_EQ(chart.findings.size(), 3u);
  EXPECT_CONTAINS(chart.findings[1], "warm: best size ");
  EXPECT_CONTAINS(chart.findings[0], "saturation at size 16 (1600 1/s): no larger size gains more than 5%");
  EXPECT_EQ(chart.findings[2], "max feasible: size 64; first OOM at size 128");
}

// One chart of my_sweeper's per size readings (repeats), mode 0 only.
SweepChart one_chart(const std::vector<std::vector<double>>& readings) {
  Report report;
  report.tool = "my_sweeper";
  for (std::size_t i = 0; i < readings.size(); ++i)
    for (std::size_t rep = 0; rep < readings[i].size(); ++rep) {
      Row row;
      row.param("size", std::to_string(1 << i)).param("mode", "0").param("attempt", "0");
      row.metric("items_per_s", readings[i][rep]);
      row.repetition = static_cast<int>(rep);
      report.rows.push_back(row);
    }
  add_sweep_charts(report, schema_with_my_sweeper());
  return report.charts.value().at(0);
}

TEST(SweepCharts, ADipDoesNotPlaceTheSaturationMarker) {
  // 4 dips: the old doubling rule marked a plateau at 2.
  const SweepChart chart = one_chart({{100}, {190}, {150}, {700}, {760}, {770}});
  ASSERT_EQ(chart.markers.size(), 2u);
  EXPECT_EQ(chart.markers[0].label, "saturation: size 16");
  EXPECT_EQ(chart.markers[1].label, "90% of best: size 8");
  EXPECT_EQ(chart.markers[1].y, 700);
}

TEST(SweepCharts, NoisyRepeatsPlaceNoSaturationMarker) {
  // Every size's repeats spread 10%: too noisy for a 5% plateau; only the 90% point is marked.
  const SweepChart chart = one_chart({{95, 100, 105}, {190, 200, 210}, {380, 400, 420}, {380, 400, 420}, {380, 400, 420}});
  ASSERT_EQ(chart.markers.size(), 1u);
  EXPECT_EQ(chart.markers[0].label, "90% of best: size 4");
  EXPECT_CONTAINS(chart.findings.at(0), "no saturation point: too noisy to place a plateau: the repeats spread 10%");
}

TEST(SweepCharts, AToolWithoutHintsGetsTheGenericPlan) {
  Report report = made_up_report();
  add_sweep_charts(report, Schema::compiled_in());  // no charts row for my_sweeper
  ASSERT_TRUE(report.charts);
  // Against the first numeric parameter that varies, split by every other
  // parameter (mode x attempt); no series, no labels.
  ASSERT_EQ(report.charts->size(), 6u);
  for (const SweepChart& chart : *report.charts) {
    EXPECT_EQ(chart.x, "size");
    EXPECT_EQ(chart.metric, "items_per_s");  // tracked and higher is better; time_ms is neither
    ASSERT_EQ(chart.series.size(), 1u);
    EXPECT_EQ(chart.series[0].name, "items_per_s");
  }
  EXPECT_EQ(report.charts->front().title, "my_sweeper: mode=0 attempt=1");
}

TEST(SweepCharts, NothingToChart) {
  Report report = made_up_report();
  for (auto& row : report.rows) row.status = RowStatus::error;
  add_sweep_charts(report, schema_with_my_sweeper());
  ASSERT_TRUE(report.charts);  // computed: there is nothing to draw
  EXPECT_TRUE(report.charts->empty());
}

// A group measured at one x alone (one checkpoint stage) is no curve: no
// chart for it, while the group that sweeps keeps its chart.
TEST(SweepCharts, AGroupWithOnePointIsNoChart) {
  Report report;
  report.tool = "my_sweeper";
  report.run_id = "20261122T010203Z-node1-42";
  auto add = [&](const std::string& stage, int size, double rate) {
    Row row;
    row.param("stage", stage).param("size", std::to_string(size)).param("mode", "0");
    row.metric("items_per_s", rate);
    report.rows.push_back(row);
  };
  add("write", 4, 10);
  add("sweep", 1, 5);
  add("sweep", 2, 9);
  add("sweep", 4, 9);  // stage does not follow size, so it groups
  add_sweep_charts(report, schema_with_my_sweeper());
  ASSERT_TRUE(report.charts);
  ASSERT_EQ(report.charts->size(), 1u);
  EXPECT_EQ(report.charts->front().title, "my_sweeper: stage=sweep");
  EXPECT_EQ(report.charts->front().series.front().points.size(), 3u);
}

class SweepChartsFiles : public redline::testing::TempDirTest {};

// What a tool computes from its own rows is what `redline report` computes
// from the CSV it wrote.
TEST_F(SweepChartsFiles, AReportsChartsMatchItsCsvReadBack) {
  const Schema schema = schema_with_my_sweeper();
  Report report = made_up_report();
  add_sweep_charts(report, schema);
  write_file_atomically(dir_ / "my_sweeper.csv", to_csv(report));
  const RunResults read_back = load_results(dir_ / "my_sweeper.csv");
  expect_same_charts(*report.charts, plan_sweep_charts("my_sweeper", all_rows(read_back), schema));
}

// The real batch_sweep on the real fake_train: its JSON carries the charts
// that the HTML report draws from its CSV.
TEST_F(SweepChartsFiles, BatchSweepWritesTheChartsTheReportDraws) {
  ChildSpec spec;
  spec.argv = {BATCH_SWEEP_BIN, "--quiet", "--max", "128", "--repeats", "2", "--metric-regex",
               "throughput: ([0-9.]+) samples/s", "--csv", (dir_ / "sweep.csv").string(), "--json",
               (dir_ / "sweep.json").string(), "--", FAKE_TRAIN_BIN, "--batch-size", "{bs}", "--step-ms", "1"};
  spec.timeout_seconds = 300;
  const ChildResult run = run_child(spec);
  ASSERT_TRUE(run.succeeded()) << run.describe_end() << "\n" << run.output;

  const RunResults results = load_results(dir_ / "sweep.csv");
  const auto expected = plan_sweep_charts("batch_sweep", all_rows(results), Schema::compiled_in());
  ASSERT_EQ(expected.size(), 1u);
  std::ifstream in(dir_ / "sweep.json");
  const auto charts = nlohmann::json::parse(in)["context"]["redline"]["charts"];
  ASSERT_EQ(charts.size(), 1u);
  std::vector<SweepChart> written(1);
  SweepChart& chart = written[0];
  chart.title = charts[0]["title"];
  chart.x = charts[0]["x"]["parameter"];
  chart.log_x = charts[0]["x"]["scale"] == "log2";
  chart.x_label = charts[0]["x"]["label"];
  chart.metric = charts[0]["y"]["metric"];
  chart.unit = charts[0]["y"]["unit"];
  chart.y_label = charts[0]["y"]["label"];
  for (const auto& series : charts[0]["series"])
    chart.series.push_back({series["name"], series["points"].get<std::vector<std::pair<double, double>>>(),
                            series["prediction"]});
  for (const auto& marker : charts[0]["markers"]) chart.markers.push_back({marker["x"], marker["y"], marker["label"]});
  chart.findings = charts[0]["findings"].get<std::vector<std::string>>();
  expect_same_charts(written, expected);
  // fake_train saturates at 32 and runs out of memory above 100.
  ASSERT_EQ(chart.markers.size(), 3u);
  EXPECT_EQ(chart.markers.at(0).label, "saturation: batch_size 32");
  EXPECT_EQ(chart.markers.at(1).label, "max feasible: batch_size 64");
  EXPECT_EQ(chart.markers.at(2).label, "first OOM: batch_size 128");
  EXPECT_EQ(chart.series.at(0).points.back().first, 64);
}

}  // namespace
