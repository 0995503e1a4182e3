// results/history.csv: every run's metrics in a tidy long format (one row
// per metric value), appended atomically after each suite run, and the
// trend analysis over it (level shifts, one-night regressions, drifts).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/report/run_results.hpp"
#include "harness/report/schema.hpp"

namespace redline {

// Columns: run_id,timestamp_utc,host,gpu,tool,case_key,repetition,metric,value,status
void append_history(const std::filesystem::path& history_csv, const RunResults& run);

// The tool of a history row whose `tool` reads `tool[entry]` (a suite entry
// named other than its tool): "gemm[peak]" -> "gemm"; a plain tool as it is.
std::string tool_of_entry(const std::string& tool);

struct HistoryPoint {
  std::string run_id, timestamp_utc;
  double value = 0;  // median over the run's repetitions
};

struct HistorySeries {
  std::string tool, case_key, metric;
  std::vector<HistoryPoint> points;  // oldest first
};

// Series of ok values, grouped by (tool, case_key, metric), runs in time
// order; series ordered by tool, case key (numbers by value: batch_size=2
// before batch_size=16) and metric. Empty filters match everything; a filter
// matches as a substring.
std::vector<HistorySeries> load_history(const std::filesystem::path& history_csv, const std::string& case_filter = "",
                                        const std::string& metric_filter = "");

// The same series from one set of results (ok rows only, without a history
// file): what a run's headline figures are computed from.
std::vector<HistorySeries> history_series(const RunResults& run);

struct TrendFinding {
  std::string kind;    // "step" (a level shift), "last-run" (one-night regression), "drift"
  std::string run_id;  // the first run at the new level (or the last run)
  double before = 0, after = 0;
  double change = 0;   // (after - before) / before
  bool worse = false;  // in the metric's bad direction
};

// See the README's "History" section for the method.
std::vector<TrendFinding> detect_trends(const HistorySeries& series, const Schema& schema, double threshold = 0.05);

}  // namespace redline
