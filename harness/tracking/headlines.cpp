#include "harness/tracking/headlines.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "harness/measure/saturation.hpp"
#include "harness/report/report.hpp"
#include "harness/tracking/sweep_charts.hpp"

namespace redline {
namespace {

using Series = std::vector<const HistorySeries*>;

std::string param_of(const std::string& case_key, const std::string& name) {
  for (const auto& [k, v] : case_key_params(case_key))
    if (k == name) return v;
  return "";
}

// The case key without the named parameters.
std::string key_without(const std::string& case_key, const std::set<std::string>& left_out) {
  std::string key;
  for (const auto& [k, v] : case_key_params(case_key))
    if (!left_out.count(k)) key += (key.empty() ? "" : ";") + k + "=" + v;
  return key;
}

// A tool without headline rows: each tracked metric, each case's own value.
std::vector<HeadlineSpec> default_headlines(const std::string& tool, const Series& series, const Schema& schema) {
  std::set<std::string> metrics;
  for (const HistorySeries* s : series) {
    const auto spec = schema.find(s->metric);
    if (spec && spec->tracked) metrics.insert(s->metric);
  }
  std::vector<HeadlineSpec> specs;
  for (const auto& metric : metrics) specs.push_back({tool, metric, {metric}, HeadlineFrom::value, "", ""});
  return specs;
}

// The first candidate the tool's history holds.
std::string pick_metric(const HeadlineSpec& spec, const Series& series) {
  for (const auto& candidate : spec.metric)
    for (const HistorySeries* s : series)
      if (metric_matches(candidate, s->metric)) return s->metric;
  return "";
}

// Of the charts row's swept-parameter candidates, the one with a number in the most series.
std::string swept_parameter(const ChartHints& hints, const Series& series) {
  std::string x;
  std::size_t most = 0;
  for (const auto& name : hints.x) {
    const auto n = static_cast<std::size_t>(std::count_if(series.begin(), series.end(), [&](const HistorySeries* s) {
      return parameter_number(param_of(s->case_key, name)).has_value();
    }));
    if (n > most) std::tie(x, most) = std::tie(name, n);
  }
  return x;
}

// Per run, the (x, value) pairs of one line's series.
struct RunCurve {
  std::string timestamp_utc;
  std::vector<ThroughputPoint> points;
};

// The figure's value for one run's curve; nullopt when it has none.
std::optional<double> figure_of(const RunCurve& run, HeadlineFrom from, bool higher_is_better) {
  if (from == HeadlineFrom::saturation) {
    const Saturation s = analyze_saturation(run.points);
    return s.point ? std::optional<double>(s.point->size) : std::nullopt;
  }
  const auto best = std::minmax_element(run.points.begin(), run.points.end(), [](const auto& a, const auto& b) {
    return a.throughput < b.throughput;
  });
  return higher_is_better ? best.second->throughput : best.first->throughput;
}

// A line per case without the swept parameter: the figure, run by run.
std::vector<HistorySeries> swept_lines(const std::string& tool, const HeadlineSpec& spec, const ChartHints& hints,
                                       const Series& series, const Schema& schema) {
  const std::string x = swept_parameter(hints, series);
  std::set<std::string> left_out(hints.not_grouping.begin(), hints.not_grouping.end());
  left_out.insert({x, hints.series, spec.where_param});
  std::map<std::string, std::map<std::string, RunCurve>> curves;  // line -> run -> curve
  for (const HistorySeries* s : series) {
    const auto at = parameter_number(param_of(s->case_key, x));
    if (!at) continue;
    auto& line = curves[key_without(s->case_key, left_out)];
    for (const auto& p : s->points) {
      RunCurve& run = line[p.run_id];
      if (run.timestamp_utc.empty() || p.timestamp_utc < run.timestamp_utc) run.timestamp_utc = p.timestamp_utc;
      run.points.push_back({*at, p.value});
    }
  }
  const auto direction = schema.find(series.front()->metric);
  const bool higher = !direction || direction->better == Better::higher;
  std::vector<HistorySeries> lines;
  for (const auto& [key, runs] : curves) {
    HistorySeries line{tool, key, spec.from == HeadlineFrom::saturation ? x : series.front()->metric, {}};
    for (const auto& [run_id, run] : runs)
      if (const auto value = figure_of(run, spec.from, higher)) line.points.push_back({run_id, run.timestamp_utc, *value});
    if (!line.points.empty()) lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<HistorySeries> value_lines(const std::string& tool, const HeadlineSpec& spec, const Series& series) {
  std::vector<HistorySeries> lines;
  for (const HistorySeries* s : series) {
    HistorySeries line = *s;
    line.tool = tool;
    line.case_key = key_without(s->case_key, {spec.where_param});
    lines.push_back(std::move(line));
  }
  return lines;
}

std::optional<HeadlineChart> headline_chart(const std::string& tool, const HeadlineSpec& spec, const Series& all,
                                            const Schema& schema) {
  const std::string metric = pick_metric(spec, all);
  if (metric.empty()) return std::nullopt;
  Series series;
  for (const HistorySeries* s : all)
    if (s->metric == metric && (spec.where_param.empty() || param_of(s->case_key, spec.where_param) == spec.where_value))
      series.push_back(s);
  if (series.empty()) return std::nullopt;
  HeadlineChart chart{tool, spec.figure, metric_axis_label(metric, schema), {}};
  const ChartHints* hints = schema.chart_hints(tool_of_entry(tool));
  if (spec.from == HeadlineFrom::value)
    chart.lines = value_lines(tool, spec, series);
  else if (hints)
    chart.lines = swept_lines(tool, spec, *hints, series, schema);
  if (spec.from == HeadlineFrom::saturation && !chart.lines.empty()) chart.y_label = chart.lines.front().metric;
  for (auto& line : chart.lines)
    std::sort(line.points.begin(), line.points.end(), [](const HistoryPoint& a, const HistoryPoint& b) {
      return std::tie(a.timestamp_utc, a.run_id) < std::tie(b.timestamp_utc, b.run_id);
    });
  std::stable_sort(chart.lines.begin(), chart.lines.end(),
                   [](const HistorySeries& a, const HistorySeries& b) { return natural_less(a.case_key, b.case_key); });
  if (chart.lines.empty()) return std::nullopt;
  return chart;
}

}  // namespace

std::vector<HeadlineChart> headline_history(const std::vector<HistorySeries>& history, const Schema& schema) {
  std::vector<std::string> tools;
  std::map<std::string, Series> by_tool;
  for (const auto& s : history) {
    if (!by_tool.count(s.tool)) tools.push_back(s.tool);
    by_tool[s.tool].push_back(&s);
  }
  std::stable_sort(tools.begin(), tools.end(), natural_less);
  std::vector<HeadlineChart> charts;
  for (const auto& tool : tools) {
    std::vector<HeadlineSpec> specs = schema.headlines(tool_of_entry(tool));
    if (specs.empty()) specs = default_headlines(tool, by_tool[tool], schema);
    for (const auto& spec : specs)
      if (auto chart = headline_chart(tool, spec, by_tool[tool], schema)) charts.push_back(std::move(*chart));
  }
  return charts;
}

}  // namespace redline
