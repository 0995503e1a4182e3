// The one result model every tool fills: rows of parameters and metrics with
// a status, plus the environment and the run's summary lines. Reporters
// (console table, CSV, JSON) only read it. Column meanings: results/SCHEMA.md.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/core/environment.hpp"
#include "harness/report/chart.hpp"
#include "harness/report/row_status.hpp"

namespace redline {

struct Row {
  // Parameters in canonical order; the case key is built from them.
  std::vector<std::pair<std::string, std::string>> params;
  // Metric name carries its unit (time_us, samples_per_s); NaN = not measured.
  std::vector<std::pair<std::string, double>> metrics;
  // Repeated measurements of one case share its key; this tells them apart
  // (Google Benchmark's repetition_index). Not part of the key.
  int repetition = 0;
  RowStatus status = RowStatus::ok;
  std::string note;

  // "batch_size=32;repeat=0": identifies the case across runs.
  std::string case_key() const;
  Row& param(std::string name, std::string value);
  Row& metric(std::string name, double value);
  // nullopt when the row has no such parameter / metric.
  std::optional<std::string> param_value(const std::string& name) const;
  std::optional<double> metric_value(const std::string& name) const;
};

struct Report {
  std::string tool;
  std::string run_id;
  Environment env;
  std::vector<Row> rows;
  // Conclusions of the run (saturation point, recommended size...), in order.
  std::vector<std::pair<std::string, std::string>> summary;
  // The metric Google Benchmark's real_time and cpu_time carry in the JSON
  // report, so compare.py compares it: a time (a name ending in time_ns,
  // time_us, time_ms or time_s) as it is, a rate (a name ending in _per_s) as
  // the time per item it implies (1 / rate, in us). Empty: each row's first
  // time metric.
  std::string time_metric;
  // The rows as charts (harness/tracking/sweep_charts.hpp), for the JSON
  // report; nullopt when the tool did not compute them.
  std::optional<std::vector<SweepChart>> charts;

  // Every parameter / metric name that appears in any row, first-seen order.
  std::vector<std::string> param_names() const;
  std::vector<std::string> metric_names() const;
};

// Starts a report for `tool`: environment captured, run id assigned.
Report start_report(std::string tool, Environment env);

// Shortest text that reads back as the same double; empty for NaN.
std::string metric_text(double value);

// "batch_size=32;dtype=float" -> {{batch_size, 32}, {dtype, float}}; a part
// without '=' is left out.
std::vector<std::pair<std::string, std::string>> case_key_params(const std::string& key);

// A parameter's value as a number ("32", "1e3"); nullopt for anything else
// ("bf16", "", "inf").
std::optional<double> parameter_number(const std::string& text);

// Order for case keys and the like in which numbers read as numbers
// ("batch_size=16" before "batch_size=100"): digit runs compare by value, a
// decimal part digit by digit, everything else character by character.
bool natural_less(const std::string& a, const std::string& b);

}  // namespace redline
