// What a tool's rows hold, declared by the tool's own room next to the code
// that writes them: each parameter and metric column (a metric's unit,
// direction and meaning), and how the rows are charted and followed over
// time. The build assembles every tool's declaration into results/SCHEMA.md
// and the schema compiled into the binaries (harness/report/schema.hpp);
// `--help` lists a tool's own. A column a tool writes but declares nowhere
// fails the tests (Report's check in write_reports).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace redline {

enum class Better { higher, lower };

struct MetricDeclaration {
  std::string name;  // the column, or a pattern "*_per_s" (a leading * matches any prefix)
  std::string unit;
  Better better = Better::higher;
  // Judged by `redline compare` and the nightly job by default; false for
  // informational figures (derived from a tracked one, wall times with start-up).
  bool tracked = false;
  std::string meaning;
  std::string where;  // which subcommand or rows write it ("peak", "`--per-iter`"); empty: every row
};

struct ParameterDeclaration {
  std::string name;
  std::string meaning;
};

// How a swept x axis is drawn: log2 for sizes that grow by factors, linear
// where a period must stay visible (the GEMM sawtooth), or judged from the
// values (log2 when they grow geometrically).
enum class AxisScale { automatic, linear, log2 };

// What a tool's rows mean on a chart.
struct ChartHints {
  std::string tool;
  // Swept-parameter candidates: the one that takes the most numeric values
  // (the first on a tie) is the x axis.
  std::vector<std::string> x;
  AxisScale x_scale = AxisScale::automatic;
  // Metric candidates in order of preference (patterns allowed): the first
  // one a row carries is charted.
  std::vector<std::string> metric;
  std::string prediction;  // a metric drawn dashed as the model's prediction; empty: none
  std::string series;      // a parameter whose values are separate lines on one chart; empty: none
  std::vector<std::pair<std::string, std::string>> series_labels;  // value -> line name
  std::vector<std::string> not_grouping;  // parameters that follow from others: they split no chart
  // Whether a saturation point means something on this x (false: steps of a
  // profile, a timeline rather than a sweep): no markers or findings then.
  bool saturation = true;
};

// What a headline figure is read from, run by run.
enum class HeadlineFrom {
  best,        // the best value over the tool's swept parameter (its charts row's x), per line
  saturation,  // the swept parameter's value at the saturation point, per line
  value        // each case's own value
};

// A figure `redline report` draws over time, one chart per tool and figure,
// a line per case.
struct HeadlineSpec {
  std::string tool;
  std::string figure;               // "best throughput", "MAMF"
  std::vector<std::string> metric;  // candidates in order (patterns allowed): the first the history holds
  HeadlineFrom from = HeadlineFrom::value;
  // Only cases whose key holds this parameter with this value (the GEMM
  // peak's result=mamf rows); empty: every case carrying the metric.
  std::string where_param, where_value;
};

// A room's declaration of the rows it writes, without the tool's name (a
// room never names a tool): bench/ gives each tool its name and its rooms'
// declarations (bench/tool_columns.cpp). `tool` in the chart and headlines
// is filled in there.
struct ColumnsDeclaration {
  std::vector<ParameterDeclaration> parameters;
  std::vector<MetricDeclaration> metrics;
  std::vector<ChartHints> chart;         // at most one
  std::vector<HeadlineSpec> headlines;
  std::vector<std::string> notes;        // remarks on the parameters, one paragraph each
};

// Appends `more`'s columns, chart, headlines and notes to `into`; a column
// `into` already declares keeps `into`'s meaning (a tool's own words first).
inline void add_columns(ColumnsDeclaration& into, const ColumnsDeclaration& more) {
  const auto declared = [](const auto& list, const std::string& name) {
    for (const auto& column : list)
      if (column.name == name) return true;
    return false;
  };
  for (const ParameterDeclaration& p : more.parameters)
    if (!declared(into.parameters, p.name)) into.parameters.push_back(p);
  for (const MetricDeclaration& m : more.metrics)
    if (!declared(into.metrics, m.name)) into.metrics.push_back(m);
  into.chart.insert(into.chart.end(), more.chart.begin(), more.chart.end());
  into.headlines.insert(into.headlines.end(), more.headlines.begin(), more.headlines.end());
  into.notes.insert(into.notes.end(), more.notes.begin(), more.notes.end());
}

struct ToolDeclaration {
  std::string tool;     // as it writes it in the rows' tool column
  std::string summary;  // one line: what the tool measures
  ColumnsDeclaration columns;
};

}  // namespace redline
