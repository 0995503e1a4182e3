// The HTML report and its SVG charts: escaping, axes, the comparison table,
// self-containment; then the real thing: results of real batch_sweep runs on
// fake_train, compared, rendered to HTML, drawn by headless Chromium, and the
// screenshot's pixels checked for the chart's line and the regression row.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "harness/core/atomic_file.hpp"
#include "harness/core/child_process.hpp"
#include "harness/report/csv_writer.hpp"
#include "harness/tracking/compare.hpp"
#include "harness/tracking/history.hpp"
#include "harness/tracking/html_report.hpp"
#include "harness/report/run_results.hpp"
#include "harness/report/schema.hpp"
#include "harness/tracking/svg_chart.hpp"
#include "tests/support.hpp"

namespace fs = std::filesystem;
using namespace redline;
using redline::testing::read_all;

namespace {

// The chart palette's first colour (#1f77b4) and the regression row's
// background (#f8c9c5), as the screenshot must show them.
struct Rgb {
  int r, g, b;
};
constexpr Rgb kFirstSeriesColour{0x1f, 0x77, 0xb4};
constexpr Rgb kRegressionBackground{0xf8, 0xc9, 0xc5};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + what.size())) ++n;
  return n;
}

const Schema& real_schema() { return Schema::compiled_in(); }

ResultRow make_row(const std::string& tool, const std::vector<std::pair<std::string, std::string>>& params,
                   const std::vector<std::pair<std::string, double>>& metrics, const std::string& status = "ok") {
  ResultRow row;
  row.run_id = "20261122T010203Z-node1-42";
  row.timestamp_utc = "2026-11-22T01:02:03Z";
  row.host = "node1";
  row.gpu = "NVIDIA H100 80GB HBM3";
  row.tool = tool;
  row.status = *parse_row_status(status);
  for (const auto& [name, value] : params) {
    row.case_key += (row.case_key.empty() ? "" : ";") + name + "=" + value;
    row.params[name] = value;
  }
  for (const auto& [name, value] : metrics) row.metrics[name] = value;
  return row;
}

// fake_train's shape: throughput doubles up to batch 32, flat above.
RunResults batch_sweep_results() {
  RunResults run;
  run.source = "sweep.csv";
  for (int bs = 1; bs <= 64; bs *= 2)
    for (int rep = 0; rep < 2; ++rep) {
      ResultRow row = make_row("batch_sweep", {{"batch_size", std::to_string(bs)}},
                               {{"samples_per_s", 1000.0 * std::min(bs, 32) + rep}, {"gain_pct", 0}});
      row.repetition = rep;
      run.rows.push_back(row);
    }
  run.rows.push_back(make_row("batch_sweep", {{"batch_size", "128"}}, {}, "oom"));
  run.rows.back().note = "torch.OutOfMemoryError: CUDA out of memory";
  return run;
}

MetricComparison metric_comparison(const std::string& case_key, double baseline, double current, Verdict verdict) {
  MetricComparison m;
  m.tool = "batch_sweep";
  m.case_key = case_key;
  m.metric = "samples_per_s";
  m.unit = "samples/s";
  m.baseline = baseline;
  m.current = current;
  m.change = (current - baseline) / baseline;
  m.baseline_n = m.current_n = 3;
  m.p_value = 0.01;
  m.verdict = verdict;
  return m;
}

// ---------------------------------------------------------------- SVG chart

TEST(SvgChart, EscapesEveryText) {
  ChartSpec spec;
  spec.title = "case <a&b> \"q\"";
  spec.x_label = "x<";
  spec.y_label = "y&";
  spec.series.push_back({"s<1>", {{1, 1}, {2, 2}}, false});
  spec.markers.push_back({2, 2, "m\"&"});
  const std::string svg = render_svg_chart(spec);
  EXPECT_CONTAINS(svg, "case &lt;a&amp;b&gt; &quot;q&quot;");
  EXPECT_CONTAINS(svg, "s&lt;1&gt;");
  EXPECT_CONTAINS(svg, "m&quot;&amp;");
  EXPECT_NOT_CONTAINS(svg, "<a&b>");
  EXPECT_NOT_CONTAINS(svg, "s<1>");
  EXPECT_NOT_CONTAINS(svg, "x<<");
}

TEST(SvgChart, LogAxisLabelsAreSizes) {
  ChartSpec spec;
  spec.log_x = true;
  ChartSeries s{"busbw", {}, false};
  for (std::uint64_t bytes = 1024; bytes <= (64u << 20); bytes *= 4) s.points.emplace_back(double(bytes), 1.0);
  spec.series.push_back(s);
  const std::string svg = render_svg_chart(spec);
  EXPECT_CONTAINS(svg, ">1K</text>");
  EXPECT_CONTAINS(svg, ">64M</text>");
  EXPECT_CONTAINS(svg, ">1M</text>");
  EXPECT_NOT_CONTAINS(svg, ">1048576</text>");
}

TEST(SvgChart, LinearAxisHasNiceTicks) {
  ChartSpec spec;
  spec.series.push_back({"tflops", {{128, 100}, {256, 310}, {384, 590}}, false});
  const std::string svg = render_svg_chart(spec);
  EXPECT_CONTAINS(svg, ">0</text>");  // throughput axes start at zero
  EXPECT_CONTAINS(svg, ">600</text>");
  EXPECT_CONTAINS(svg, ">200</text>");
  EXPECT_NOT_CONTAINS(svg, ">590</text>");  // ticks are round, not data values
}

TEST(SvgChart, ClassesSeriesMarkersLegendAndDashes) {
  ChartSpec spec;
  spec.title = "t";
  spec.series.push_back({"measured", {{1, 1}, {2, 2}, {3, 2.5}}, false});
  spec.series.push_back({"model prediction", {{1, 1.2}, {2, 2.1}, {3, 2.6}}, true});
  spec.markers.push_back({2, 2, "90% of best: 2"});
  spec.markers.push_back({3, 2.5, "plateau: 3"});
  const std::string svg = render_svg_chart(spec);
  EXPECT_EQ(svg.rfind("<svg class=\"chart\"", 0), 0u);
  EXPECT_EQ(count(svg, "class=\"series\""), 2u);
  EXPECT_EQ(count(svg, "class=\"marker\""), 2u);
  EXPECT_EQ(count(svg, "class=\"point\""), 6u);
  EXPECT_CONTAINS(svg, "stroke=\"#1f77b4\"");
  EXPECT_CONTAINS(svg, "stroke=\"#ff7f0e\"");  // one colour per series
  EXPECT_CONTAINS(svg, "stroke-dasharray=\"7 5\"");
  EXPECT_CONTAINS(svg, "class=\"legend\"");
  EXPECT_CONTAINS(svg, ">plateau: 3</text>");
  EXPECT_NOT_CONTAINS(svg, "http");  // inline SVG needs no xmlns URL
}

TEST(SvgChart, EmptyAndSinglePoint) {
  ChartSpec empty;
  empty.title = "nothing";
  empty.series.push_back({"s", {}, false});
  const std::string none = render_svg_chart(empty);
  EXPECT_CONTAINS(none, "no data");
  EXPECT_EQ(count(none, "class=\"series\""), 0u);

  ChartSpec log_nonpositive;  // a log axis cannot show x <= 0 or NaN
  log_nonpositive.log_x = true;
  log_nonpositive.series.push_back({"s", {{0, 1}, {-1, 2}, {4, std::nan("")}}, false});
  EXPECT_CONTAINS(render_svg_chart(log_nonpositive), "no data");

  for (const bool log_x : {false, true}) {
    ChartSpec one;
    one.log_x = log_x;
    one.series.push_back({"s", {{64, 5}}, false});
    const std::string svg = render_svg_chart(one);
    EXPECT_NOT_CONTAINS(svg, "no data");
    EXPECT_EQ(count(svg, "class=\"point\""), 1u);
    EXPECT_NOT_CONTAINS(svg, "nan");
    EXPECT_NOT_CONTAINS(svg, "inf");
  }
}

// Finite values near the top of the double range once overflowed the axis to
// inf, and the tick loop never ended (a report spun for minutes on 20 GB).
TEST(SvgChart, HugeFiniteValuesGiveAFiniteAxis) {
  const double largest = std::numeric_limits<double>::max();
  const std::vector<std::vector<std::pair<double, double>>> cases = {
      {{1, 1.7e308}, {2, 1}}, {{1, 1e308}, {2, -1e308}}, {{-1e308, 1}, {1e308, 2}},
      {{1, largest}, {2, -largest}}, {{1, largest}}, {{largest, 5}, {-largest, 6}}};
  for (const auto& points : cases) {
    ChartSpec spec;
    spec.series.push_back({"s", points, false});
    const std::string svg = render_svg_chart(spec);
    EXPECT_EQ(count(svg, "class=\"point\""), points.size());
    EXPECT_NOT_CONTAINS(svg, "nan");
    EXPECT_NOT_CONTAINS(svg, "inf");
    EXPECT_LT(svg.size(), 20000u);  // a handful of ticks, not millions
  }
}

// ---------------------------------------------------------------- HTML report

TEST(HtmlReport, SelfContainedWithHeaderAndSaturationMarked) {
  ReportInputs in;
  in.title = "nightly";
  in.run = batch_sweep_results();
  in.schema = real_schema();
  const std::string html = render_html_report(in);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NOT_CONTAINS(html, "http");  // no external URL of any kind
  EXPECT_NOT_CONTAINS(html, "<script");
  EXPECT_NOT_CONTAINS(html, "src=");
  EXPECT_NOT_CONTAINS(html, "url(");
  EXPECT_CONTAINS(html, "<style>");
  EXPECT_CONTAINS(html, "20261122T010203Z-node1-42");
  EXPECT_CONTAINS(html, "NVIDIA H100 80GB HBM3");
  EXPECT_CONTAINS(html, "2026-11-22T01:02:03Z");
  EXPECT_CONTAINS(html, "id=\"sweeps\"");
  EXPECT_CONTAINS(html, "How to read this");
  EXPECT_NOT_CONTAINS(html, "id=\"comparison\"");  // no baseline given
  EXPECT_NOT_CONTAINS(html, "id=\"history\"");
  EXPECT_EQ(count(html, "<svg class=\"chart\""), 1u);
  // Throughput doubles up to 32 and is flat above: the saturation point, also the first at 90% of the best.
  EXPECT_CONTAINS(html, "saturation: batch_size 32");
  EXPECT_NOT_CONTAINS(html, "90% of best: batch_size");
  // And the memory limit: 64 ran, 128 did not fit.
  EXPECT_CONTAINS(html, "max feasible: batch_size 64");
  EXPECT_CONTAINS(html, "first OOM: batch_size 128");
  EXPECT_EQ(count(html, "class=\"marker\""), 3u);
  // The OOM row is listed, not charted as a point.
  EXPECT_CONTAINS(html, "batch_size=128</code> <span class=\"status\">oom</span>");
}

TEST(HtmlReport, SaturationAndNinetyPercentMarkedApart) {
  ReportInputs in;
  // 90% of the best (505) is first reached at 4, but 16 still gains 8.7%
  // over 4 and 32 gains 5.2% over 8: the saturation point is 16. (The old
  // doubling rule put the plateau at 4, where 8 gains 4.3%.)
  const std::vector<std::pair<int, double>> pts = {{1, 100}, {2, 200}, {4, 460}, {8, 480}, {16, 500}, {32, 505}};
  for (const auto& [bs, t] : pts)
    in.run.rows.push_back(make_row("batch_sweep", {{"batch_size", std::to_string(bs)}}, {{"samples_per_s", t}}));
  const std::string html = render_html_report(in);
  EXPECT_CONTAINS(html, "saturation: batch_size 16");
  EXPECT_CONTAINS(html, "90% of best: batch_size 4");
  EXPECT_EQ(count(html, "class=\"marker\""), 2u);
}

TEST(HtmlReport, MemoryLimitMarked) {
  ReportInputs in;
  for (int bs = 1; bs <= 64; bs *= 2)
    in.run.rows.push_back(make_row("batch_sweep", {{"batch_size", std::to_string(bs)}}, {{"samples_per_s", 100.0 * bs}}));
  in.run.rows.push_back(make_row("batch_sweep", {{"batch_size", "128"}}, {}, "oom"));
  const std::string html = render_html_report(in);
  EXPECT_CONTAINS(html, "max feasible: batch_size 64");
  EXPECT_CONTAINS(html, "first OOM: batch_size 128");
  EXPECT_CONTAINS(html, "max feasible: batch_size 64; first OOM at batch_size 128");
}

TEST(HtmlReport, EscapesCaseKeysEverywhere) {
  const std::string nasty = "a<b&\"c\">";
  ReportInputs in;
  in.title = "t<&>";
  in.schema = real_schema();
  for (int n = 1; n <= 8; n *= 2)
    in.run.rows.push_back(
        make_row("my_tool", {{"name", nasty}, {"n", std::to_string(n)}}, {{"tokens_per_s", 10.0 * n}}));
  Comparison cmp;
  cmp.metrics.push_back(metric_comparison("name=" + nasty, 100, 70, Verdict::slower));
  cmp.only_in_current.push_back("my_tool name=" + nasty);
  in.comparison = cmp;
  in.baseline_name = "base<line>";
  const std::string html = render_html_report(in);
  EXPECT_NOT_CONTAINS(html, nasty);
  EXPECT_NOT_CONTAINS(html, "t<&>");
  EXPECT_NOT_CONTAINS(html, "base<line>");
  EXPECT_CONTAINS(html, "a&lt;b&amp;&quot;c&quot;&gt;");
  EXPECT_CONTAINS(html, "base&lt;line&gt;");
  // A tool the report does not know: its tracked higher-is-better metric against the varying parameter.
  EXPECT_EQ(count(html, "<svg class=\"chart\""), 1u);
  EXPECT_CONTAINS(html, ">tokens_per_s (tokens/s)</text>");
}

TEST(HtmlReport, ComparisonTableHighlightsRegressions) {
  ReportInputs in;
  in.run = batch_sweep_results();
  Comparison cmp;
  cmp.metrics.push_back(metric_comparison("batch_size=8", 8000, 8100, Verdict::same));
  cmp.metrics.push_back(metric_comparison("batch_size=16", 16000, 12800, Verdict::slower));
  cmp.metrics.push_back(metric_comparison("batch_size=32", 32000, 36000, Verdict::faster));
  cmp.metrics.push_back(metric_comparison("batch_size=64", 32000, 30000, Verdict::noisy));
  cmp.only_in_baseline.push_back("batch_sweep batch_size=256");
  cmp.geomean_improvement = 0.973;
  in.comparison = cmp;
  in.baseline_name = "results/baselines/h100";
  const std::string html = render_html_report(in);
  const std::size_t regression = html.find("<tr class=\"regression\">");
  ASSERT_NE(regression, std::string::npos) << html;
  const std::string row = html.substr(regression, html.find("</tr>", regression) - regression);
  EXPECT_CONTAINS(row, "batch_size=16");
  EXPECT_CONTAINS(row, "-20.0%");
  EXPECT_CONTAINS(row, "SLOWER");
  EXPECT_CONTAINS(row, "p=0.010");
  EXPECT_EQ(count(html, "<tr class=\"regression\">"), 1u);
  EXPECT_CONTAINS(html, "<tr class=\"improvement\">");
  EXPECT_CONTAINS(html, "<tr class=\"noisy\">");
  EXPECT_CONTAINS(html, "tr.regression td { background: #f8c9c5; }");
  EXPECT_LT(regression, html.find("<tr class=\"improvement\">"));  // regressions first
  EXPECT_CONTAINS(html, "Cases only in the baseline (1)");
  EXPECT_CONTAINS(html, "batch_sweep batch_size=256");
  EXPECT_CONTAINS(html, "<b>0.973</b> (-2.7%)");
  EXPECT_CONTAINS(html, "1 SLOWER");
}

// The text from `heading` to the next heading or the section's end.
std::string block_after(const std::string& html, const std::string& heading) {
  const std::size_t at = html.find(heading);
  if (at == std::string::npos) return "";
  const std::size_t end = std::min(html.find("<h3>", at + 1), html.find("</section>", at));
  return html.substr(at, end - at);
}

// Two runs of different suites leave hundreds of cases on one side: the
// report counts them per tool and folds the list away, for the reference's
// cases not run now as for the baseline's.
TEST(HtmlReport, CasesOnOneSideAreCountedPerToolAndFolded) {
  ReportInputs in;
  in.run = batch_sweep_results();
  Comparison cmp;
  for (int n = 1; n <= 3; ++n) cmp.only_in_baseline.push_back("gemm_bench m=" + std::to_string(n));
  cmp.only_in_baseline.push_back("allreduce_bench[allreduce_host] bytes=8 (no ok row in current: error)");
  cmp.only_in_baseline.push_back("gemm_bench m=9");
  cmp.not_run_now.push_back("attention_bench head_dim=128");
  in.comparison = cmp;
  const std::string html = render_html_report(in);

  const std::string only = block_after(html, "Cases only in the baseline (5)");
  ASSERT_FALSE(only.empty()) << html;
  EXPECT_CONTAINS(only,
                  "<p class=\"cases\"><code>gemm_bench</code> 4, <code>allreduce_bench[allreduce_host]</code> 1</p>");
  const std::size_t folded = only.find("<details><summary>the list</summary>");
  ASSERT_NE(folded, std::string::npos) << only;
  for (const auto& item : cmp.only_in_baseline) {
    const std::size_t at = only.find("<li><code>" + item + "</code></li>");
    EXPECT_TRUE(at != std::string::npos && at > folded) << item << " is in the folded list";
  }
  EXPECT_LT(only.find("gemm_bench m=9"), only.find("</details>"));

  const std::string not_run = block_after(html, "Cases in the reference, not run now (not a regression) (1)");
  ASSERT_FALSE(not_run.empty()) << html;
  EXPECT_CONTAINS(not_run, "<code>attention_bench</code> 1</p>\n<details>");
  EXPECT_CONTAINS(not_run, "<li><code>attention_bench head_dim=128</code></li>\n</ul></details>");
  EXPECT_EQ(count(html, "<details><summary>the list</summary>"), 2u) << "no empty list is shown";
}

TEST(HtmlReport, AllreduceChartPerGroupWithBothPlacements) {
  ReportInputs in;
  in.schema = real_schema();
  for (const std::string collective : {"all_reduce", "all_gather"})
    for (std::uint64_t bytes = 1024; bytes <= (64u << 20); bytes *= 4)
      for (const std::string inplace : {"0", "1"}) {
        const double busbw = 100.0 * double(bytes) / double(bytes + (1u << 20)) + (inplace == "1" ? 1 : 0);
        in.run.rows.push_back(make_row("allreduce_bench",
                                       {{"collective", collective}, {"bytes", std::to_string(bytes)},
                                        {"count", std::to_string(bytes / 4)}, {"dtype", "float"},
                                        {"op", collective == "all_reduce" ? "sum" : "none"}, {"root", "-1"},
                                        {"inplace", inplace}},
                                       {{"time_us", 10}, {"algbw_GBps", busbw / 2}, {"busbw_GBps", busbw}}));
      }
  const std::string html = render_html_report(in);
  EXPECT_EQ(count(html, "<svg class=\"chart\""), 2u) << html;
  EXPECT_EQ(count(html, "class=\"series\""), 4u);
  EXPECT_CONTAINS(html, "allreduce_bench: collective=all_reduce dtype=float op=sum root=-1");
  EXPECT_CONTAINS(html, ">out-of-place</text>");
  EXPECT_CONTAINS(html, ">in-place</text>");
  EXPECT_CONTAINS(html, ">64M</text>");
  EXPECT_CONTAINS(html, ">busbw_GBps (GB/s)</text>");
  EXPECT_CONTAINS(html, "bytes (log2 scale)");
}

TEST(HtmlReport, GemmSawtoothWithModelPrediction) {
  ReportInputs in;
  for (int m = 128; m <= 2048; m += 128) {
    const double tiles = (m + 255) / 256;
    const double efficiency = (m / 256.0) / tiles;  // tile quantization sawtooth
    in.run.rows.push_back(make_row("gemm_bench",
                                   {{"m", std::to_string(m)}, {"n", "4096"}, {"k", "4096"}, {"dtype", "bf16"}},
                                   {{"tflops", 700 * efficiency - 5}, {"predicted_tflops", 700 * efficiency}}));
  }
  const std::string html = render_html_report(in);
  EXPECT_EQ(count(html, "<svg class=\"chart\""), 1u) << html;
  EXPECT_EQ(count(html, "class=\"series\""), 2u);
  EXPECT_CONTAINS(html, ">model prediction</text>");
  EXPECT_CONTAINS(html, "stroke-dasharray=\"7 5\"");
  EXPECT_CONTAINS(html, "gemm_bench: n=4096 k=4096 dtype=bf16");
  EXPECT_CONTAINS(html, ">m</text>");  // linear x: the swept dimension
}

TEST(HtmlReport, HistoryChartPerToolAndFigureALinePerCase) {
  ReportInputs in;
  HeadlineChart chart{"allreduce_bench", "peak busbw", "busbw_GBps (GB/s)", {}};
  for (const std::string collective : {"all_reduce", "broadcast"}) {
    HistorySeries line{"allreduce_bench", "collective=" + collective + ";dtype=float", "busbw_GBps", {}};
    for (int day = 1; day <= 9; ++day)
      line.points.push_back({"run" + std::to_string(day), "2026-11-0" + std::to_string(day) + "T02:00:00Z",
                             collective == "all_reduce" ? 100.0 + day : 50.0});
    chart.lines.push_back(line);
  }
  in.history.push_back(chart);
  const std::string html = render_html_report(in);
  EXPECT_CONTAINS(html, "id=\"history\"");
  EXPECT_EQ(count(html, "<figure class=\"history\">"), 1u);
  EXPECT_CONTAINS(html, "allreduce_bench: peak busbw");
  EXPECT_EQ(count(html, "class=\"series\""), 2u);
  EXPECT_CONTAINS(html, ">collective=broadcast;dtype=float</text>");
  EXPECT_CONTAINS(html, "run (1 = 2026-11-01, 9 = 2026-11-09)");
  EXPECT_CONTAINS(html, "<th>collective=all_reduce;dtype=float</th><th>collective=broadcast;dtype=float</th>");
  EXPECT_CONTAINS(html, "<td>9</td><td>2026-11-09T02:00:00Z</td><td><code>run9</code></td><td>109</td><td>50</td>");
}

// `redline report` with a history: the headline figures of the run's tool,
// one chart per figure, not one per batch size.
TEST(HtmlReport, RedlineReportDrawsTheHeadlinesOfTheHistory) {
  const redline::testing::TempDir temp("html_report_headlines");
  const fs::path history = temp / "history.csv";
  fs::path last;
  for (int run = 1; run <= 3; ++run) {
    Report report;
    report.tool = "batch_sweep";
    report.run_id = "2026110" + std::to_string(run) + "T020000Z-node1-1";
    report.env.timestamp_utc = "2026-11-0" + std::to_string(run) + "T02:00:00Z";
    for (int bs = 1; bs <= 256; bs *= 2) {
      Row row;
      row.param("batch_size", std::to_string(bs)).metric("samples_per_s", 100.0 * std::min(bs, 32) + run);
      report.rows.push_back(row);
    }
    last = temp / ("run" + std::to_string(run));
    fs::create_directories(last);
    write_file_atomically(last / "batch_sweep.csv", to_csv(report));
    append_history(history, load_results(last / "batch_sweep.csv"));
  }
  ChildSpec spec;
  spec.argv = {REDLINE_BIN, "report", last.string(), "--history", history.string(), "-o", (temp / "r.html").string()};
  spec.timeout_seconds = 60;
  const ChildResult r = run_child(spec);
  ASSERT_TRUE(r.succeeded()) << r.output;
  std::ifstream in(temp / "r.html");
  std::stringstream text;
  text << in.rdbuf();
  const std::string html = text.str();
  EXPECT_EQ(count(html, "<figure class=\"history\">"), 2u);
  EXPECT_CONTAINS(html, "batch_sweep: best throughput");
  EXPECT_CONTAINS(html, "batch_sweep: saturation batch");
  EXPECT_CONTAINS(html, "<td>3</td><td>2026-11-03T02:00:00Z</td><td><code>20261103T020000Z-node1-1</code></td><td>3203</td>");
  EXPECT_CONTAINS(html, "<code>20261103T020000Z-node1-1</code></td><td>32</td>");  // the saturation batch
}

// ---------------------------------------------------------------- real browser

// A PNG's pixels as RGB, decoded with the system's zlib loaded at run time
// (Chromium itself depends on it), so the test needs no extra link library.
struct Image {
  std::uint32_t width = 0, height = 0;
  std::vector<std::uint8_t> rgb;
};

std::uint32_t be32(const std::string& s, std::size_t at) {
  return (std::uint32_t(std::uint8_t(s[at])) << 24) | (std::uint32_t(std::uint8_t(s[at + 1])) << 16) |
         (std::uint32_t(std::uint8_t(s[at + 2])) << 8) | std::uint32_t(std::uint8_t(s[at + 3]));
}

std::optional<Image> decode_png(const std::string& png, std::string& error) {
  if (png.size() < 8 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) {
    error = "not a PNG";
    return std::nullopt;
  }
  Image image;
  int colour_type = -1;
  std::string idat;
  for (std::size_t at = 8; at + 12 <= png.size();) {
    const std::uint32_t length = be32(png, at);
    const std::string type = png.substr(at + 4, 4);
    if (at + 12 + length > png.size()) break;
    if (type == "IHDR") {
      image.width = be32(png, at + 8);
      image.height = be32(png, at + 12);
      const int depth = std::uint8_t(png[at + 16]);
      colour_type = std::uint8_t(png[at + 17]);
      const int interlace = std::uint8_t(png[at + 20]);
      if (depth != 8 || (colour_type != 2 && colour_type != 6) || interlace != 0) {
        error = "unsupported PNG: depth " + std::to_string(depth) + ", colour type " + std::to_string(colour_type) +
                ", interlace " + std::to_string(interlace);
        return std::nullopt;
      }
    } else if (type == "IDAT") {
      idat += png.substr(at + 8, length);
    } else if (type == "IEND") {
      break;
    }
    at += 12 + length;
  }
  if (colour_type < 0 || image.width == 0 || image.height == 0 || idat.empty()) {
    error = "PNG without IHDR or IDAT";
    return std::nullopt;
  }

  using Uncompress = int (*)(unsigned char*, unsigned long*, const unsigned char*, unsigned long);
  void* zlib = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!zlib) {
    error = std::string("cannot load libz.so.1: ") + dlerror();
    return std::nullopt;
  }
  const auto uncompress = reinterpret_cast<Uncompress>(dlsym(zlib, "uncompress"));
  const std::size_t channels = colour_type == 6 ? 4 : 3;
  const std::size_t stride = image.width * channels;
  std::vector<std::uint8_t> raw((stride + 1) * image.height);
  unsigned long raw_size = raw.size();
  const int z = uncompress ? uncompress(raw.data(), &raw_size, reinterpret_cast<const unsigned char*>(idat.data()),
                                        idat.size())
                           : -1;
  dlclose(zlib);
  if (z != 0 || raw_size != raw.size()) {
    error = "zlib uncompress failed (" + std::to_string(z) + ")";
    return std::nullopt;
  }

  // Undo the per-row filters (PNG spec section 9).
  std::vector<std::uint8_t> pixels(stride * image.height);
  for (std::size_t y = 0; y < image.height; ++y) {
    const std::uint8_t filter = raw[y * (stride + 1)];
    const std::uint8_t* in = &raw[y * (stride + 1) + 1];
    std::uint8_t* out = &pixels[y * stride];
    const std::uint8_t* up = y ? &pixels[(y - 1) * stride] : nullptr;
    for (std::size_t i = 0; i < stride; ++i) {
      const int a = i >= channels ? out[i - channels] : 0;
      const int b = up ? up[i] : 0;
      const int c = up && i >= channels ? up[i - channels] : 0;
      int predicted = 0;
      switch (filter) {
        case 0: break;
        case 1: predicted = a; break;
        case 2: predicted = b; break;
        case 3: predicted = (a + b) / 2; break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          predicted = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default: error = "bad PNG filter " + std::to_string(filter); return std::nullopt;
      }
      out[i] = static_cast<std::uint8_t>(in[i] + predicted);
    }
  }
  image.rgb.reserve(std::size_t(image.width) * image.height * 3);
  for (std::size_t p = 0; p < std::size_t(image.width) * image.height; ++p)
    image.rgb.insert(image.rgb.end(), &pixels[p * channels], &pixels[p * channels] + 3);
  return image;
}

std::size_t pixels_of(const Image& image, Rgb colour, int tolerance = 3) {
  std::size_t n = 0;
  for (std::size_t p = 0; p + 2 < image.rgb.size(); p += 3)
    if (std::abs(image.rgb[p] - colour.r) <= tolerance && std::abs(image.rgb[p + 1] - colour.g) <= tolerance &&
        std::abs(image.rgb[p + 2] - colour.b) <= tolerance)
      ++n;
  return n;
}

std::optional<std::string> find_chromium() {
  for (const char* name : {"chromium", "chromium-browser"})
    if (auto path = find_executable(name)) return path;
  return std::nullopt;
}

class HtmlReportBrowser : public redline::testing::TempDirTest {
 protected:
  // The real batch_sweep sweeping the real fake_train (saturates at 32, OOM above 100).
  RunResults sweep(const std::string& name, const std::vector<std::string>& train_args) {
    const fs::path csv = dir_ / name / "batch_sweep.csv";
    ChildSpec spec;
    spec.argv = {BATCH_SWEEP_BIN, "--quiet", "--max", "128", "--repeats", "5",
                 "--metric-regex", "throughput: ([0-9.]+) samples/s", "--csv", csv.string(), "--",
                 FAKE_TRAIN_BIN, "--batch-size", "{bs}", "--step-ms", "1"};
    // A slower node is the machine, not the command (which names the case).
    for (std::size_t i = 0; i + 1 < train_args.size(); i += 2)
      if (train_args[i] == "--throughput-scale") spec.extra_env.emplace_back("FAKE_TRAIN_THROUGHPUT_SCALE", train_args[i + 1]);
      else spec.argv.insert(spec.argv.end(), {train_args[i], train_args[i + 1]});
    spec.timeout_seconds = 300;
    const ChildResult r = run_child(spec);
    EXPECT_TRUE(r.succeeded()) << r.describe_end() << "\n" << r.output;
    return load_results(dir_ / name);
  }
};

TEST_F(HtmlReportBrowser, ChromiumDrawsTheChartsAndTheRegression) {
  const auto chromium = find_chromium();
  if (!chromium) GTEST_SKIP() << "headless Chromium not installed (scripts/setup installs it)";

  // A baseline and a current run 20% slower: real CSVs, read back, compared.
  const RunResults baseline = sweep("baseline", {});
  const RunResults current = sweep("current", {"--throughput-scale", "0.8"});
  ASSERT_FALSE(current.rows.empty());
  const Schema schema = real_schema();
  ReportInputs in;
  in.title = "redline report: browser test";
  in.run = current;
  in.schema = schema;
  in.comparison = compare_results(baseline, current, schema);
  in.baseline_name = baseline.source;
  ASSERT_TRUE(in.comparison->any_slower()) << format_comparison(*in.comparison, CompareFormat::table, "b", "c");
  const std::string html = render_html_report(in);
  ASSERT_EQ(count(html, "<svg class=\"chart\""), 1u);
  const fs::path report = dir_ / "report.html";
  write_file_atomically(report, html);

  const fs::path png = dir_ / "report.png";
  ChildSpec spec;
  spec.argv = {*chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--user-data-dir=" + (dir_ / "profile").string(), "--screenshot=" + png.string(),
               "--window-size=1200,2400", "file://" + report.string()};
  spec.timeout_seconds = 180;
  const ChildResult r = run_child(spec);
  ASSERT_TRUE(r.succeeded()) << r.describe_end() << "\n" << r.output;
  ASSERT_TRUE(fs::exists(png)) << "Chromium wrote no screenshot:\n" << r.output;

  std::string error;
  const auto image = decode_png(read_all(png), error);
  ASSERT_TRUE(image) << png << ": " << error;
  EXPECT_EQ(image->width, 1200u);
  EXPECT_EQ(image->height, 2400u);
  // The series line and its dots in the palette's first colour: the SVG was
  // laid out and painted, not just parsed.
  const std::size_t line_pixels = pixels_of(*image, kFirstSeriesColour);
  EXPECT_GT(line_pixels, 200u) << "series colour pixels in " << png;
  // The regression rows' red background.
  const std::size_t regression_pixels = pixels_of(*image, kRegressionBackground);
  EXPECT_GT(regression_pixels, 2000u) << "regression background pixels in " << png;
  // And the page is not blank otherwise: text and frames.
  EXPECT_GT(image->rgb.size() / 3 - pixels_of(*image, {255, 255, 255}, 0), 20000u);
}

TEST(HtmlReport, HistoryTrendFindingsAreListedAndMarked) {
  // A 20% drop from run 11 on: the report names the step, as `redline history` does.
  ReportInputs inputs;
  inputs.title = "trend";
  inputs.schema = Schema::compiled_in();
  HistorySeries series{"batch_sweep", "batch_size=8", "samples_per_s", {}};
  for (int i = 0; i < 20; ++i) {
    const double wobble = 1.0 + 0.004 * ((i * 7) % 5 - 2);
    series.points.push_back({"run-" + std::to_string(i), "2026-11-01T00:00:00Z", (i < 10 ? 1000.0 : 800.0) * wobble});
  }
  inputs.history.push_back({"batch_sweep", "best throughput", "samples_per_s (samples/s)", {series}});
  const std::string html = render_html_report(inputs);
  EXPECT_CONTAINS(html, "<li class=\"regression\">worse step at run-10");
  EXPECT_CONTAINS(html, "class=\"marker\"");
}

}  // namespace
