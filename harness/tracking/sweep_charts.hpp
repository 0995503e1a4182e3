// A tool's rows as sweep charts: the tool's row of the schema's charts table
// (or the generic plan) picks the swept parameter, the metric, the series and
// the scale; each chart holds the median curve of every series, the model's
// prediction and the saturation points. The one place this is decided: the
// HTML report draws these charts, and a tool writes them into its JSON
// (context.redline.charts) for scripts/plot.
#pragma once

#include <string>
#include <vector>

#include "harness/report/chart.hpp"
#include "harness/report/report.hpp"
#include "harness/report/run_results.hpp"
#include "harness/report/schema.hpp"

namespace redline {

// One tool's rows (from one or more files; a chart never mixes files) as
// charts, one per (file, group of parameters, metric); empty when nothing can
// be charted (no numeric parameter varies, or no metric to draw). The ok rows
// make the curves; where rows ran out of memory, the largest x that ran ok
// and the first that did not are marked.
std::vector<SweepChart> plan_sweep_charts(const std::string& tool, const std::vector<const ResultRow*>& rows,
                                          const Schema& schema);

// The charts of a tool's own report, as `redline report` will draw them from
// its CSV: sets report.charts.
void add_sweep_charts(Report& report, const Schema& schema);
// The same with the compiled-in schema, called by a tool after it measured:
// charts never cost it its reports, so a failure to plan them (a malformed
// schema) leaves report.charts unset and says why on stderr.
void add_sweep_charts(Report& report);

// An x value as the charts print it: a size (64M) on a log2 axis, else a
// plain number (32, not 32.00).
std::string x_value_text(double x, bool log_x);

// "busbw_GBps (GB/s)": a metric with its unit from the schema.
std::string metric_axis_label(const std::string& metric, const Schema& schema);

}  // namespace redline
