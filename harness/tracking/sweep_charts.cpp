#include "harness/tracking/sweep_charts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "harness/core/units.hpp"
#include "harness/measure/saturation.hpp"
#include "harness/measure/stats.hpp"
#include "harness/report/console_table.hpp"

namespace redline {
namespace {

using Rows = std::vector<const ResultRow*>;

// Parameter names in case-key order (the tool's canonical order), then any
// the keys did not name.
std::vector<std::string> param_order(const Rows& rows) {
  std::vector<std::string> order;
  std::set<std::string> seen;
  for (const ResultRow* row : rows) {
    std::size_t start = 0;
    while (start <= row->case_key.size()) {
      const std::size_t end = std::min(row->case_key.find(';', start), row->case_key.size());
      const std::string part = row->case_key.substr(start, end - start);
      const std::size_t eq = part.find('=');
      const std::string name = part.substr(0, eq);
      if (eq != std::string::npos && row->params.count(name) && seen.insert(name).second) order.push_back(name);
      start = end + 1;
    }
    for (const auto& [name, value] : row->params)
      if (seen.insert(name).second) order.push_back(name);
  }
  return order;
}

std::set<std::string> metric_names(const Rows& rows) {
  std::set<std::string> names;
  for (const ResultRow* row : rows)
    for (const auto& [name, value] : row->metrics) names.insert(name);
  return names;
}

std::set<double> numeric_values(const Rows& rows, const std::string& name, bool* all_numeric) {
  std::set<double> values;
  *all_numeric = true;
  for (const ResultRow* row : rows) {
    const auto v = parameter_number(row->param(name));
    if (v)
      values.insert(*v);
    else
      *all_numeric = false;
  }
  return values;
}

// Sizes that grow by factors (1, 2, 4, ... or 8 bytes to 8G) read best on a
// log2 axis; evenly spaced ones (8, 16, 24, ...) on a linear one.
bool looks_geometric(const std::set<double>& xs) {
  if (xs.size() < 3 || *xs.begin() <= 0 || *xs.rbegin() / *xs.begin() < 16) return false;
  std::size_t growing = 0, steps = 0;
  for (auto it = std::next(xs.begin()); it != xs.end(); ++it, ++steps)
    if (*it / *std::prev(it) >= 1.5) ++growing;
  return 2 * growing >= steps;
}

// How one tool's rows become charts (its row of the schema's charts table).
struct ChartPlan {
  std::string x;  // the swept parameter
  AxisScale x_scale = AxisScale::automatic;
  bool log_x = false;
  std::vector<std::string> metrics;                  // one chart per metric
  std::string prediction;                            // a metric overlaid as a dashed "model prediction" series
  std::string series_param;                          // splits a chart into series
  std::map<std::string, std::string> series_labels;  // series value -> line name
  std::set<std::string> not_grouping;                // parameters that neither split charts nor series
  bool saturation = true;                            // markers and findings of the saturation point
};

// The tool's row of the schema's charts table; a plan without x or metric
// when the rows lack what it names (the generic plan then applies).
ChartPlan plan_from_hints(const ChartHints& hints, const Rows& rows, const std::vector<std::string>& params,
                          const std::set<std::string>& metrics) {
  ChartPlan plan;
  auto has_param = [&](const std::string& name) {
    return std::find(params.begin(), params.end(), name) != params.end();
  };
  // Of several candidates, the swept one takes the most values (m, n or k of a GEMM sweep).
  std::size_t most = 0;
  for (const auto& name : hints.x) {
    bool numeric = false;
    const auto values = numeric_values(rows, name, &numeric);
    if (has_param(name) && numeric && values.size() > most) {
      most = values.size();
      plan.x = name;
    }
  }
  for (const auto& candidate : hints.metric) {
    const auto it = std::find_if(metrics.begin(), metrics.end(),
                                 [&](const std::string& m) { return metric_matches(candidate, m); });
    if (it == metrics.end()) continue;
    plan.metrics.push_back(*it);
    break;
  }
  plan.x_scale = hints.x_scale;
  if (metrics.count(hints.prediction)) plan.prediction = hints.prediction;
  if (has_param(hints.series)) {
    plan.series_param = hints.series;
    plan.series_labels = {hints.series_labels.begin(), hints.series_labels.end()};
  }
  plan.not_grouping = {hints.not_grouping.begin(), hints.not_grouping.end()};
  plan.saturation = hints.saturation;
  return plan;
}

// A tool without chart hints: its tracked higher-is-better metrics against
// the first numeric parameter that varies.
ChartPlan generic_plan(const Rows& rows, const std::vector<std::string>& params, const std::set<std::string>& metrics,
                       const Schema& schema) {
  ChartPlan plan;
  for (const auto& name : params) {
    bool numeric = false;
    if (numeric_values(rows, name, &numeric).size() > 1 && numeric) {
      plan.x = name;
      break;
    }
  }
  for (const auto& m : metrics) {
    const auto spec = schema.find(m);
    if (spec && spec->better == Better::higher && spec->tracked) plan.metrics.push_back(m);
  }
  return plan;
}

// A parameter that varies in lockstep with x (n and k of a square GEMM
// sweep, count for one dtype) would split every curve into single points.
bool follows_x(const Rows& rows, const std::string& x, const std::string& name) {
  std::map<std::string, std::set<std::string>> by_x;
  std::set<std::string> values;
  for (const ResultRow* row : rows) {
    by_x[row->param(x)].insert(row->param(name));
    values.insert(row->param(name));
  }
  return values.size() > 1 && std::all_of(by_x.begin(), by_x.end(), [](const auto& e) { return e.second.size() == 1; });
}

std::optional<ChartPlan> plan_charts(const std::string& tool, const Rows& rows, const std::vector<std::string>& params,
                                     const Schema& schema) {
  const std::set<std::string> metrics = metric_names(rows);
  const ChartHints* hints = schema.chart_hints(tool);
  ChartPlan plan = hints ? plan_from_hints(*hints, rows, params, metrics) : ChartPlan{};
  if (plan.x.empty() || plan.metrics.empty()) plan = generic_plan(rows, params, metrics, schema);
  if (plan.x.empty() || plan.metrics.empty()) return std::nullopt;

  bool numeric = false;
  const std::set<double> xs = numeric_values(rows, plan.x, &numeric);
  plan.log_x = plan.x_scale == AxisScale::log2 || (plan.x_scale == AxisScale::automatic && looks_geometric(xs));
  for (const auto& name : params)
    if (name != plan.x && name != plan.series_param && follows_x(rows, plan.x, name)) plan.not_grouping.insert(name);
  return plan;
}

std::string series_name(const ChartPlan& plan, const std::string& value) {
  if (plan.series_param.empty()) return "";
  const auto label = plan.series_labels.find(value);
  return label != plan.series_labels.end() ? label->second : plan.series_param + "=" + value;
}

// Every ok reading of the metric, repetitions apart, as (x, y).
std::vector<ThroughputPoint> readings(const Rows& rows, const std::string& x_param, const std::string& metric) {
  std::vector<ThroughputPoint> out;
  for (const ResultRow* row : rows) {
    const auto x = parameter_number(row->param(x_param));
    const auto it = row->metrics.find(metric);
    if (row->status == RowStatus::ok && x && it != row->metrics.end() && std::isfinite(it->second)) out.push_back({*x, it->second});
  }
  return out;
}

// Median over repetitions at each x, in x order.
std::vector<std::pair<double, double>> median_curve(const Rows& rows, const std::string& x_param,
                                                    const std::string& metric) {
  std::map<double, std::vector<double>> by_x;
  for (const auto& p : readings(rows, x_param, metric)) by_x[p.size].push_back(p.throughput);
  std::vector<std::pair<double, double>> curve;
  for (auto& [x, ys] : by_x) curve.emplace_back(x, summarize(ys).median);
  return curve;
}

std::string saturation_text(const Saturation& s, const std::string& x_name, bool as_size, const std::string& unit) {
  if (!s.best) return "no ok points";
  if (!s.fraction) return "nothing measured above 0: no saturation point";
  auto at = [&](const ThroughputPoint& p) {
    return x_name + " " + x_value_text(p.size, as_size) + " (" + human_number(p.throughput) + " " + unit + ")";
  };
  const std::string reason =
      plateau_reason(s, SaturationOptions{}, x_name, [&](double x) { return x_value_text(x, as_size); });
  std::string text = "best " + at(*s.best) + "; ";
  text += s.point ? "saturation at " + at(*s.point) + ": " + reason : "no saturation point: " + reason;
  return text + "; 90% of best reached at " + at(*s.fraction);
}

// The saturation point, and the first x at 90% of the best where that is
// another point (or where no saturation point is placed).
std::vector<ChartMarker> saturation_markers(const Saturation& s, const std::string& x_name, bool as_size) {
  std::vector<ChartMarker> markers;
  if (!s.fraction) return markers;
  if (s.point)
    markers.push_back(
        {s.point->size, s.point->throughput, "saturation: " + x_name + " " + x_value_text(s.point->size, as_size)});
  if (!s.point || s.point->size != s.fraction->size)
    markers.push_back({s.fraction->size, s.fraction->throughput,
                       "90% of best: " + x_name + " " + x_value_text(s.fraction->size, as_size)});
  return markers;
}

// Where a group's rows ran out of memory: the largest x that ran ok (on its
// curve) and the smallest x that did not fit (on the x axis: nothing was
// measured there), with the finding in words; nothing when no row did.
void mark_memory_limit(const Rows& rows, const ChartPlan& plan, SweepChart& chart) {
  std::optional<double> max_ok, first_oom;
  for (const ResultRow* row : rows) {
    const auto x = parameter_number(row->param(plan.x));
    if (!x) continue;
    if (row->status == RowStatus::ok) max_ok = std::max(max_ok.value_or(*x), *x);
    if (row->status == RowStatus::oom) first_oom = std::min(first_oom.value_or(*x), *x);
  }
  if (!first_oom) return;
  std::string finding = "first OOM at " + plan.x + " " + x_value_text(*first_oom, plan.log_x);
  if (max_ok) {
    double y = 0;
    for (const auto& series : chart.series)
      for (const auto& [x, value] : series.points)
        if (x == *max_ok && !series.dashed && y == 0) y = value;
    const std::string text = "max feasible: " + plan.x + " " + x_value_text(*max_ok, plan.log_x);
    chart.markers.push_back({*max_ok, y, text});
    finding = text + "; " + finding;
  }
  chart.markers.push_back({*first_oom, 0, "first OOM: " + plan.x + " " + x_value_text(*first_oom, plan.log_x)});
  chart.findings.push_back(finding);
}

std::string short_unit(const std::string& metric, const Schema& schema) {
  const auto spec = schema.find(metric);
  if (spec && !spec->unit.empty()) return spec->unit;
  if (metric.ends_with("_per_s")) return metric.substr(0, metric.size() - 6) + "/s";
  return "";
}

std::string file_stem(const std::string& file) {
  const std::size_t slash = file.find_last_of('/');
  std::string name = slash == std::string::npos ? file : file.substr(slash + 1);
  if (name.ends_with(".csv")) name.resize(name.size() - 4);
  return name;
}

// Rows that share a chart: one source (file and run), then the values of the
// grouping parameters, in the order groups first appear.
struct RowGroup {
  std::string title;
  Rows rows;
};

std::vector<RowGroup> group_rows(const Rows& rows, const std::vector<std::string>& params, const ChartPlan& plan) {
  std::set<std::string> sources;
  for (const ResultRow* row : rows) sources.insert(row->file + "\n" + row->run_id);
  std::vector<RowGroup> groups;
  std::map<std::string, std::size_t> index;
  for (const ResultRow* row : rows) {
    std::string key = row->file + "\n" + row->run_id;
    std::string title = sources.size() > 1 ? file_stem(row->file) + (row->file.empty() ? row->run_id : "") : "";
    for (const auto& name : params) {
      if (name == plan.x || name == plan.series_param || plan.not_grouping.count(name)) continue;
      key += "\n" + name + "=" + row->param(name);
      title += (title.empty() ? "" : " ") + name + "=" + row->param(name);
    }
    const auto [it, added] = index.try_emplace(key, groups.size());
    if (added) groups.push_back({title, {}});
    groups[it->second].rows.push_back(row);
  }
  return groups;
}

// One metric of one group: a series per value of the series parameter (in
// value order: out-of-place before in-place), the first carrying the
// saturation markers, then the prediction.
SweepChart group_chart(const std::string& tool, const RowGroup& group, const std::string& metric, const ChartPlan& plan,
                       const Schema& schema) {
  SweepChart chart;
  chart.title = tool + (group.title.empty() ? "" : ": " + group.title);
  chart.x = plan.x;
  chart.log_x = plan.log_x;
  chart.x_label = plan.x + (plan.log_x ? " (log2 scale)" : "");
  chart.metric = metric;
  chart.unit = short_unit(metric, schema);
  chart.y_label = metric_axis_label(metric, schema);
  std::map<std::string, Rows> by_series;
  for (const ResultRow* row : group.rows)
    by_series[plan.series_param.empty() ? "" : row->param(plan.series_param)].push_back(row);
  for (const auto& [value, series_rows] : by_series) {
    ChartSeries series{series_name(plan, value), median_curve(series_rows, plan.x, metric), false};
    if (series.points.empty()) continue;  // a series whose rows all failed
    if (series.name.empty()) series.name = plan.prediction.empty() ? metric : "measured " + metric;
    if (plan.saturation) {
      const Saturation s = analyze_saturation(readings(series_rows, plan.x, metric));
      if (chart.series.empty()) chart.markers = saturation_markers(s, plan.x, plan.log_x);
      chart.findings.push_back((by_series.size() > 1 ? series.name + ": " : std::string()) +
                               saturation_text(s, plan.x, plan.log_x, chart.unit));
    }
    chart.series.push_back(std::move(series));
  }
  if (!plan.prediction.empty())
    chart.series.push_back({"model prediction", median_curve(group.rows, plan.x, plan.prediction), true});
  mark_memory_limit(group.rows, plan, chart);
  return chart;
}

// A chart shows a sweep when a measured series has two points or more; a
// group of rows measured at one x alone (one stage of a checkpoint run) is
// no curve and no saturation point.
bool is_a_sweep(const SweepChart& chart) {
  return std::any_of(chart.series.begin(), chart.series.end(),
                     [](const ChartSeries& s) { return !s.dashed && s.points.size() >= 2; });
}

}  // namespace

std::string x_value_text(double x, bool log_x) {
  if (log_x && x >= 0 && x == std::floor(x) && x < 1.8e19) return format_size(static_cast<std::uint64_t>(x));
  // Whole numbers as digits (batch 32, not 32.00); anything else for humans.
  if (x == std::floor(x) && std::abs(x) < 1e15) return format_number(x, 0);
  return human_number(x);
}

std::string metric_axis_label(const std::string& metric, const Schema& schema) {
  const auto spec = schema.find(metric);
  if (spec && !spec->unit.empty()) return metric + " (" + spec->unit + ")";
  return metric;
}

std::vector<SweepChart> plan_sweep_charts(const std::string& tool, const Rows& rows, const Schema& schema) {
  std::vector<SweepChart> charts;
  Rows ok_rows, charted;  // the plan follows what ran ok; out-of-memory rows mark the limit
  for (const ResultRow* row : rows) {
    if (row->status == RowStatus::ok) ok_rows.push_back(row);
    if (row->status == RowStatus::ok || row->status == RowStatus::oom) charted.push_back(row);
  }
  const std::vector<std::string> params = param_order(ok_rows);
  const auto plan = ok_rows.empty() ? std::nullopt : plan_charts(tool, ok_rows, params, schema);
  if (!plan) return charts;
  for (const RowGroup& group : group_rows(charted, params, *plan))
    for (const auto& metric : plan->metrics) {
      SweepChart chart = group_chart(tool, group, metric, *plan, schema);
      if (is_a_sweep(chart)) charts.push_back(std::move(chart));
    }
  return charts;
}

void add_sweep_charts(Report& report, const Schema& schema) {
  const RunResults results = results_of(report);
  Rows rows;
  for (const ResultRow& row : results.rows) rows.push_back(&row);
  report.charts = plan_sweep_charts(report.tool, rows, schema);
}

void add_sweep_charts(Report& report) {
  try {
    add_sweep_charts(report, Schema::compiled_in());
  } catch (const std::exception& e) {
    report.charts.reset();
    std::cerr << report.tool << ": warning: no charts in the JSON report: " << e.what() << "\n";
  }
}

}  // namespace redline
