// `redline report`: one HTML file with everything inline (style, SVG charts)
// and nothing that runs or loads: no script, no external URL, so it opens the
// same from a CI artifact, a mail attachment or a laptop without network.
#include "harness/tracking/html_report.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness/core/units.hpp"
#include "harness/report/console_table.hpp"
#include "harness/tracking/svg_chart.hpp"
#include "harness/tracking/sweep_charts.hpp"

namespace redline {
namespace {

std::string esc(const std::string& text) { return escape_xml(text); }

std::string signed_percent(double fraction) {
  const double pct = fraction * 100;
  return (pct > 0 ? "+" : "") + format_number(pct, 1) + "%";
}

// Distinct values in first-seen order.
template <typename Get>
std::vector<std::string> distinct(const std::vector<ResultRow>& rows, Get get) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& row : rows) {
    const std::string v = get(row);
    if (!v.empty() && seen.insert(v).second) out.push_back(v);
  }
  return out;
}

std::string joined(const std::vector<std::string>& values, std::size_t max_shown = 6) {
  if (values.empty()) return "-";
  std::string out;
  for (std::size_t i = 0; i < values.size() && i < max_shown; ++i) out += (i ? ", " : "") + values[i];
  if (values.size() > max_shown) out += " and " + std::to_string(values.size() - max_shown) + " more";
  return out;
}

// The chart's series as a table, one row per x: the numbers behind the lines.
std::string data_table(const SweepChart& chart) {
  std::set<double> xs;
  for (const auto& series : chart.series)
    for (const auto& [x, y] : series.points) xs.insert(x);
  std::string html = "<details><summary>data</summary><table class=\"data\"><thead><tr><th>" + esc(chart.x) + "</th>";
  for (const auto& series : chart.series) html += "<th>" + esc(series.name) + "</th>";
  html += "</tr></thead><tbody>\n";
  for (const double x : xs) {
    html += "<tr><td>" + esc(x_value_text(x, chart.log_x)) + "</td>";
    for (const auto& series : chart.series) {
      const auto it = std::find_if(series.points.begin(), series.points.end(), [&](const auto& p) { return p.first == x; });
      html += "<td>" + (it == series.points.end() ? std::string("-") : esc(human_number(it->second))) + "</td>";
    }
    html += "</tr>\n";
  }
  return html + "</tbody></table></details>\n";
}

std::string sweep_figure(const SweepChart& chart) {
  ChartSpec spec;
  spec.title = chart.title;
  spec.x_label = chart.x_label;
  spec.y_label = chart.y_label;
  spec.log_x = chart.log_x;
  spec.series = chart.series;
  spec.markers = chart.markers;
  std::string html = "<figure class=\"sweep\">\n" + render_svg_chart(spec) + "<figcaption>";
  for (std::size_t i = 0; i < chart.findings.size(); ++i) html += (i ? "<br>" : "") + esc(chart.findings[i]);
  return html + "</figcaption>\n" + data_table(chart) + "</figure>\n";
}

std::string failed_rows(const std::vector<const ResultRow*>& failed) {
  if (failed.empty()) return "";
  std::string html = "<p class=\"note\">Rows not ok (" + std::to_string(failed.size()) + "):</p>\n<ul class=\"failed\">\n";
  constexpr std::size_t kShown = 20;
  for (std::size_t i = 0; i < failed.size() && i < kShown; ++i) {
    std::string note = failed[i]->note;
    if (note.size() > 120) note = note.substr(0, 117) + "...";
    html += "<li><code>" + esc(failed[i]->case_key) + "</code> <span class=\"status\">" + esc(to_string(failed[i]->status)) +
            "</span>" + (note.empty() ? "" : " " + esc(note)) + "</li>\n";
  }
  if (failed.size() > kShown) html += "<li>and " + std::to_string(failed.size() - kShown) + " more</li>\n";
  return html + "</ul>\n";
}

// One tool's charts: a figure per (source file, group of parameters, metric).
std::string tool_sweeps(const std::string& tool, const std::vector<const ResultRow*>& all_rows, const Schema& schema) {
  std::string html = "<h3>" + esc(tool) + "</h3>\n";
  std::vector<const ResultRow*> rows;
  std::vector<const ResultRow*> failed;
  for (const ResultRow* row : all_rows) (row->status == RowStatus::ok ? rows : failed).push_back(row);

  const std::vector<SweepChart> charts = plan_sweep_charts(tool, all_rows, schema);
  if (charts.empty()) {
    html += "<p class=\"note\">Nothing to chart: " +
            std::string(rows.empty() ? "no row ran ok."
                                     : "no numeric parameter varies, no higher-is-better metric, or every group "
                                       "of rows was measured at one value alone.") +
            "</p>\n";
  } else {
    html += "<div class=\"charts\">\n";
    for (const SweepChart& chart : charts) html += sweep_figure(chart);
    html += "</div>\n";
  }
  return html + failed_rows(failed);
}

std::string sweeps_section(const RunResults& run, const Schema& schema) {
  std::string html = "<section id=\"sweeps\">\n<h2>Sweeps</h2>\n";
  std::vector<std::string> tools;
  std::map<std::string, std::vector<const ResultRow*>> by_tool;
  for (const auto& row : run.rows) {
    if (!by_tool.count(row.tool)) tools.push_back(row.tool);
    by_tool[row.tool].push_back(&row);
  }
  if (tools.empty()) html += "<p class=\"note\">The run has no rows.</p>\n";
  for (const auto& tool : tools) html += tool_sweeps(tool, by_tool[tool], schema);
  return html + "</section>\n";
}

int verdict_rank(Verdict v) {
  switch (v) {
    case Verdict::slower: return 0;
    case Verdict::noisy: return 1;
    case Verdict::faster: return 2;
    case Verdict::same: return 3;
  }
  return 4;
}

std::string verdict_class(Verdict v) {
  switch (v) {
    case Verdict::slower: return "regression";
    case Verdict::faster: return "improvement";
    case Verdict::noisy: return "noisy";
    case Verdict::same: return "same";
  }
  return "";
}

std::string case_list(const std::string& heading, const std::vector<std::string>& items) {
  if (items.empty()) return "";
  std::string html = "<h3>" + esc(heading) + " (" + std::to_string(items.size()) + ")</h3>\n<ul class=\"cases\">\n";
  for (const auto& item : items) html += "<li><code>" + esc(item) + "</code></li>\n";
  return html + "</ul>\n";
}

// Items labelled "tool case_key ...": how many per tool, in first-seen order.
std::vector<std::pair<std::string, std::size_t>> per_tool(const std::vector<std::string>& items) {
  std::vector<std::pair<std::string, std::size_t>> counts;
  for (const auto& item : items) {
    const std::string tool = item.substr(0, item.find(' '));
    const auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == tool; });
    if (it == counts.end())
      counts.emplace_back(tool, 1);
    else
      ++it->second;
  }
  return counts;
}

// A list of cases as counts per tool, the cases themselves folded away: two
// runs of different suites leave hundreds, which would bury the comparison.
std::string folded_case_list(const std::string& heading, const std::vector<std::string>& items) {
  if (items.empty()) return "";
  std::string html = "<h3>" + esc(heading) + " (" + std::to_string(items.size()) + ")</h3>\n<p class=\"cases\">";
  const auto counts = per_tool(items);
  for (std::size_t i = 0; i < counts.size(); ++i)
    html += std::string(i ? ", " : "") + "<code>" + esc(counts[i].first) + "</code> " +
            std::to_string(counts[i].second);
  html += "</p>\n<details><summary>the list</summary><ul class=\"cases\">\n";
  for (const auto& item : items) html += "<li><code>" + esc(item) + "</code></li>\n";
  return html + "</ul></details>\n";
}

std::string comparison_section(const Comparison& cmp, const std::string& baseline_name) {
  std::string html = "<section id=\"comparison\">\n<h2>Comparison</h2>\n";
  std::size_t counts[4] = {0, 0, 0, 0};
  for (const auto& m : cmp.metrics) ++counts[verdict_rank(m.verdict)];
  html += "<p class=\"summary\">Baseline: <code>" + esc(baseline_name.empty() ? "-" : baseline_name) + "</code>. " +
          std::to_string(cmp.metrics.size()) + " metrics compared: <b>" + std::to_string(counts[0]) +
          " SLOWER</b>, " + std::to_string(counts[2]) + " FASTER, " + std::to_string(counts[1]) + " NOISY, " +
          std::to_string(counts[3]) + " SAME. Geometric mean of current/baseline, oriented so that above 1 is " +
          "better: <b>" + format_number(cmp.geomean_improvement, 3) + "</b> (" +
          signed_percent(cmp.geomean_improvement - 1) + ").</p>\n";
  if (!cmp.metrics.empty()) {
    std::vector<const MetricComparison*> sorted;
    for (const auto& m : cmp.metrics) sorted.push_back(&m);
    // Regressions first: they are what the reader came for.
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
      return verdict_rank(a->verdict) < verdict_rank(b->verdict);
    });
    html += "<table class=\"compare\"><thead><tr><th>tool</th><th>case</th><th>metric</th><th>baseline</th>"
            "<th>current</th><th>change</th><th>verdict</th><th>evidence</th></tr></thead><tbody>\n";
    for (const auto* m : sorted) {
      std::string evidence = "n=" + std::to_string(m->baseline_n) + " vs " + std::to_string(m->current_n);
      if (m->p_value) evidence = "p=" + format_number(*m->p_value, 3) + ", " + evidence;
      else if (m->noise) evidence = "noise &plusmn;" + esc(format_number(*m->noise * 100, 1)) + "%, " + evidence;
      html += "<tr class=\"" + verdict_class(m->verdict) + "\"><td>" + esc(m->tool) + "</td><td><code>" +
              esc(m->case_key) + "</code></td><td>" + esc(m->metric) + (m->better == Better::higher ? " &uarr;" : " &darr;") +
              "</td><td class=\"num\">" + esc(human_number(m->baseline)) + "</td><td class=\"num\">" +
              esc(human_number(m->current)) + "</td><td class=\"num\">" + esc(change_text(*m)) +
              "</td><td class=\"verdict\">" + esc(to_string(m->verdict)) + "</td><td>" + evidence + "</td></tr>\n";
    }
    html += "</tbody></table>\n<p class=\"note\">&uarr; higher is better, &darr; lower is better "
            "(results/SCHEMA.md).</p>\n";
  }
  html += folded_case_list("Cases only in the baseline", cmp.only_in_baseline);
  html += folded_case_list("Cases failing now in part (a regression)", cmp.failing_in_part);
  html += folded_case_list("Cases in the reference, not run now (not a regression)", cmp.not_run_now);
  html += folded_case_list("Tracked metrics missing in the current run", cmp.missing_metrics);
  html += folded_case_list("Cases only in the current run", cmp.only_in_current);
  html += case_list("Metrics not compared (no direction in the schema)", cmp.not_compared);
  return html + "</section>\n";
}

// The runs of a chart's lines, oldest first, numbered from 1.
std::vector<const HistoryPoint*> chart_runs(const HeadlineChart& chart) {
  std::map<std::pair<std::string, std::string>, const HistoryPoint*> runs;
  for (const auto& line : chart.lines)
    for (const auto& p : line.points) runs.try_emplace({p.timestamp_utc, p.run_id}, &p);
  std::vector<const HistoryPoint*> out;
  for (const auto& [key, p] : runs) out.push_back(p);
  return out;
}

std::string line_name(const HeadlineChart& chart, const HistorySeries& line) {
  return line.case_key.empty() ? chart.figure : line.case_key;
}

// The trend findings of every line (the method of `redline history`), marked
// on the chart and listed.
std::string trend_findings(const HeadlineChart& chart, const std::map<std::string, std::size_t>& run_index,
                           ChartSpec& spec, const Schema& schema) {
  std::string listed;
  for (const auto& line : chart.lines)
    for (const auto& f : detect_trends(line, schema)) {
      for (const auto& p : line.points)
        if (p.run_id == f.run_id) spec.markers.push_back({static_cast<double>(run_index.at(p.run_id)), p.value, f.kind});
      const std::string who = chart.lines.size() > 1 ? line_name(chart, line) + ": " : "";
      listed += "<li class=\"" + std::string(f.worse ? "regression" : "improvement") + "\">" +
                esc(who + (f.worse ? "worse " : "better ") + f.kind + " at " + f.run_id + ": " +
                    human_number(f.before) + " -> " + human_number(f.after) + " (" + (f.change > 0 ? "+" : "") +
                    format_number(100 * f.change, 1) + "%)") +
                "</li>\n";
    }
  return listed;
}

// The figures per run, a column per line.
std::string runs_table(const HeadlineChart& chart, const std::vector<const HistoryPoint*>& runs) {
  std::string html = "<details><summary>runs</summary><table class=\"data\"><thead><tr><th>#</th><th>date "
                     "(UTC)</th><th>run</th>";
  for (const auto& line : chart.lines) html += "<th>" + esc(line_name(chart, line)) + "</th>";
  html += "</tr></thead><tbody>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    html += "<tr><td>" + std::to_string(i + 1) + "</td><td>" + esc(runs[i]->timestamp_utc) + "</td><td><code>" +
            esc(runs[i]->run_id) + "</code></td>";
    for (const auto& line : chart.lines) {
      const auto it = std::find_if(line.points.begin(), line.points.end(),
                                   [&](const HistoryPoint& p) { return p.run_id == runs[i]->run_id; });
      html += "<td>" + (it == line.points.end() ? std::string("-") : esc(human_number(it->value))) + "</td>";
    }
    html += "</tr>\n";
  }
  return html + "</tbody></table></details>";
}

// One chart per tool and headline figure, a line per case, one point per run.
std::string history_figure(const HeadlineChart& chart, const Schema& schema) {
  const auto runs = chart_runs(chart);
  std::map<std::string, std::size_t> run_index;
  for (std::size_t i = 0; i < runs.size(); ++i) run_index[runs[i]->run_id] = i + 1;
  ChartSpec spec;
  spec.title = chart.tool + ": " + chart.figure;
  spec.y_label = chart.y_label;
  spec.x_label = "run";
  const auto date = [](const HistoryPoint* p) { return p->timestamp_utc.substr(0, 10); };
  if (!runs.empty() && !runs.front()->timestamp_utc.empty())
    spec.x_label += " (1 = " + date(runs.front()) + ", " + std::to_string(runs.size()) + " = " + date(runs.back()) + ")";
  for (const auto& line : chart.lines) {
    ChartSeries series{line_name(chart, line), {}, false};
    for (const auto& p : line.points) series.points.emplace_back(static_cast<double>(run_index.at(p.run_id)), p.value);
    spec.series.push_back(std::move(series));
  }
  const std::string listed = trend_findings(chart, run_index, spec, schema);
  std::string html = "<figure class=\"history\">\n" + render_svg_chart(spec);
  if (!listed.empty()) html += "<ul class=\"trends\">\n" + listed + "</ul>\n";
  return html + runs_table(chart, runs) + "</figure>\n";
}

std::string history_section(const std::vector<HeadlineChart>& history, const Schema& schema) {
  std::string html = "<section id=\"history\">\n<h2>History</h2>\n<div class=\"charts\">\n";
  for (const auto& chart : history) html += history_figure(chart, schema);
  return html + "</div>\n</section>\n";
}

constexpr const char* kStyle = R"(
body { font-family: system-ui, sans-serif; margin: 0 auto; padding: 16px 24px; max-width: 1360px; color: #222222; }
h1 { font-size: 1.6em; margin: 0 0 8px 0; }
h2 { border-bottom: 2px solid #cccccc; padding-bottom: 4px; margin-top: 32px; }
h3 { margin-top: 24px; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #d0d0d0; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.meta th { width: 9em; }
code { font-family: monospace, monospace; font-size: 0.9em; }
nav a { margin-right: 1em; color: #0b5394; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; padding: 8px; border: 1px solid #dddddd; border-radius: 4px; background: #ffffff; }
figcaption { font-size: 0.85em; max-width: 640px; margin-top: 4px; }
details { font-size: 0.85em; margin-top: 4px; }
svg.chart { display: block; max-width: 100%; height: auto; }
tr.regression td { background: #f8c9c5; }
ul.trends li.regression { color: #a00000; font-weight: bold; }
ul.trends li.improvement { color: #1a6b1a; }
tr.regression td.verdict { color: #a40e0e; font-weight: bold; }
tr.improvement td { background: #cdeccd; }
tr.improvement td.verdict { color: #0e6b0e; font-weight: bold; }
tr.noisy td { background: #fdf1c7; }
.note { color: #555555; font-size: 0.9em; }
.status { font-weight: bold; }
.how p { max-width: 60em; line-height: 1.45; }
)";

std::string how_to_read() {
  return "<section id=\"how-to-read\" class=\"how\">\n<h2>How to read this</h2>\n"
         "<p><b>Saturation point.</b> Each sweep chart plots throughput against the swept size (medians over "
         "repetitions, ok rows only). The diamond marked <i>saturation</i> is the smallest size from which no larger "
         "measured size gains more than 5% (every larger size counts, so one noisy dip or spike does not place it, "
         "and a later rise moves it), never below the size that reaches 90% of the best. Below it, doubling the "
         "batch (or message) roughly doubles throughput; above it, more only costs memory. A series still gaining "
         "at its end, or whose repetitions spread more than 5%, has no saturation point; the <i>90% of best</i> "
         "diamond, the smallest size reaching 90% of the best, is then the one shown. Where rows ran out of memory, "
         "the largest size that ran and the first that did not fit (on the x axis) are marked too.</p>\n"
         "<p><b>busbw.</b> algbw is the message size divided by the time, what the application sees. busbw "
         "multiplies it by the collective's bus factor (2(n-1)/n for all_reduce, (n-1)/n for all_gather, "
         "reduce_scatter and alltoall, 1 for the rest), so it is comparable to the slowest link's bandwidth "
         "(NVLink, PCIe or the NIC) whatever the rank count: nccl-tests' definition, see the README's "
         "\"Reading algbw and busbw\". GB/s is 1e9 bytes per second, TFLOPS 1e12 operations per second; sizes are "
         "binary (1K = 1024).</p>\n"
         "<p><b>GEMM model.</b> The dashed \"model prediction\" line is the throughput the tile/wave quantization "
         "model expects; where the measured curve dips with it, the shape, not the kernel, is at fault.</p>\n"
         "<p><b>Comparison.</b> Cases are matched by case key. SLOWER (red) means significantly worse than the "
         "threshold in the metric's bad direction (Mann-Whitney U test with repetitions, otherwise a noise band "
         "from each side's CV); FASTER (green) the opposite; NOISY means the change is within the noise. The "
         "geometric mean summarises every compared metric, above 1 being better.</p>\n"
         "<p><b>History.</b> The headline figures of each tool (best throughput, saturation batch, peak busbw per "
         "collective, MAMF per dtype: results/SCHEMA.md's headlines table), one chart per tool and figure, a line per "
         "case, one point per nightly run, oldest first; the trend findings (level shifts, one-night regressions) "
         "are the ones <code>redline history</code> prints.</p>\n"
         "</section>\n";
}

}  // namespace

std::string render_html_report(const ReportInputs& inputs) {
  const std::string title = inputs.title.empty() ? "redline report" : inputs.title;
  const auto& rows = inputs.run.rows;

  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
                     esc(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";

  html += "<header>\n<h1>" + esc(title) + "</h1>\n<table class=\"meta\">\n";
  auto meta = [&](const std::string& name, const std::string& value) {
    html += "<tr><th>" + esc(name) + "</th><td>" + esc(value) + "</td></tr>\n";
  };
  const auto run_ids = distinct(rows, [](const ResultRow& r) { return r.run_id; });
  meta(run_ids.size() > 1 ? "run ids" : "run id", joined(run_ids));
  meta("host", joined(distinct(rows, [](const ResultRow& r) { return r.host; })));
  meta("gpu", joined(distinct(rows, [](const ResultRow& r) { return r.gpu; })));
  auto timestamps = distinct(rows, [](const ResultRow& r) { return r.timestamp_utc; });
  std::sort(timestamps.begin(), timestamps.end());
  meta("time (UTC)", timestamps.empty() ? "-"
                     : timestamps.size() == 1 ? timestamps.front()
                                              : timestamps.front() + " to " + timestamps.back());
  meta("tools", joined(distinct(rows, [](const ResultRow& r) { return r.tool; }), 20));
  if (!inputs.run.source.empty()) meta("results", inputs.run.source);
  if (inputs.comparison) meta("baseline", inputs.baseline_name.empty() ? "-" : inputs.baseline_name);
  html += "</table>\n";
  html += "<nav>";
  if (inputs.comparison) html += "<a href=\"#comparison\">Comparison</a>";
  html += "<a href=\"#sweeps\">Sweeps</a>";
  if (!inputs.history.empty()) html += "<a href=\"#history\">History</a>";
  html += "<a href=\"#how-to-read\">How to read this</a></nav>\n</header>\n";

  // The comparison first: on a nightly report, regressions are what the reader came for.
  if (inputs.comparison) html += comparison_section(*inputs.comparison, inputs.baseline_name);
  html += sweeps_section(inputs.run, inputs.schema);
  if (!inputs.history.empty()) html += history_section(inputs.history, inputs.schema);
  html += how_to_read();
  html += "</body>\n</html>\n";
  return html;
}

}  // namespace redline
