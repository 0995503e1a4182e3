// What results/SCHEMA.md says about each metric (its unit, whether higher or
// lower is better, whether nightly comparison tracks it) and how each tool's
// rows are charted. Tools that judge or chart results (compare, history,
// report, the charts in a tool's JSON) read these from here, never from the
// user. The file is compiled into the binaries (Schema::compiled_in), so a
// build folder carried to another machine keeps it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redline {

enum class Better { higher, lower };

struct MetricSpec {
  std::string name;  // exact name, or a pattern "*_per_s" (a leading * matches any prefix)
  std::string unit;
  Better better = Better::higher;
  bool tracked = true;  // compared by default (false: informational, e.g. wall time with start-up)
};

// How a swept x axis is drawn: log2 for sizes that grow by factors, linear
// where a period must stay visible (the GEMM sawtooth), or judged from the
// values (log2 when they grow geometrically).
enum class AxisScale { automatic, linear, log2 };

// One row of the "## Charts" table: what a tool's rows mean on a chart.
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
};

// What a headline figure is read from, run by run.
enum class HeadlineFrom {
  best,        // the best value over the tool's swept parameter (its charts row's x), per line
  saturation,  // the swept parameter's value at the saturation point, per line
  value        // each case's own value
};

// One row of the "## Headlines" table: a figure `redline report` draws over
// time, one chart per tool and figure, a line per case.
struct HeadlineSpec {
  std::string tool;
  std::string figure;               // "best throughput", "MAMF"
  std::vector<std::string> metric;  // candidates in order (patterns allowed): the first the history holds
  HeadlineFrom from = HeadlineFrom::value;
  // Only cases whose key holds this parameter with this value (the GEMM
  // peak's result=mamf rows); empty: every case carrying the metric.
  std::string where_param, where_value;
};

class Schema {
 public:
  // Parses the "## Metrics" table of SCHEMA.md (columns: metric | unit |
  // better | tracked | tools | meaning) and, when present, the "## Charts"
  // table (columns: tool | x | x scale | metric | prediction | series |
  // series labels | not grouping) and the "## Headlines" table (columns:
  // tool | figure | metric | from | rows). Throws std::runtime_error naming
  // the file and line for a malformed row.
  static Schema load(const std::filesystem::path& schema_md);
  static Schema parse(std::string_view markdown, const std::string& source);
  // results/SCHEMA.md as it was when the binary was built.
  static const Schema& compiled_in();

  // Exact names first, then patterns; nullopt for a metric the schema lacks.
  std::optional<MetricSpec> find(const std::string& metric) const;
  const std::vector<MetricSpec>& metrics() const { return metrics_; }
  // The tool's row of the charts table; nullptr for a tool without one.
  const ChartHints* chart_hints(const std::string& tool) const;
  // The tool's rows of the headlines table, in order; empty for a tool without.
  std::vector<HeadlineSpec> headlines(const std::string& tool) const;

 private:
  std::vector<MetricSpec> metrics_;
  std::vector<ChartHints> charts_;
  std::vector<HeadlineSpec> headlines_;
};

// `name` is `metric`, or the pattern "*suffix" that `metric` ends with.
bool metric_matches(const std::string& name, const std::string& metric);

// results/SCHEMA.md's text as it was when the binary was built (generated
// into the build by embed_text.cmake).
std::string_view compiled_schema_markdown();

}  // namespace redline
