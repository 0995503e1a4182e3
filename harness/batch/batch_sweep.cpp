#include "harness/batch/batch_sweep.hpp"

#include <algorithm>
#include <iostream>
#include <limits>
#include <map>

#include "harness/measure/accumulation.hpp"
#include "harness/batch/batch_trials.hpp"
#include "harness/batch/case_config.hpp"
#include "harness/batch/trial_summary.hpp"
#include "harness/core/child_process.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/console_table.hpp"

namespace redline {
namespace {

constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

std::string describe_point(const std::optional<ThroughputPoint>& p, const std::string& metric) {
  if (!p) return "none";
  return std::to_string(static_cast<std::int64_t>(p->size)) + " (" + human_number(p->throughput) + " " + metric + ")";
}

std::int64_t batch_of(const Row& row) { return std::stoll(row.params.front().second); }

void check_options(const std::string& tool, const BatchSweepOptions& options) {
  if (options.command.empty()) throw UsageError("missing COMMAND: use " + tool + " [OPTIONS] -- COMMAND [ARGS...]");
  if (!find_executable(options.command.front()))
    throw UsageError("COMMAND", options.command.front(), "not found or not executable (searched PATH)");
  if (options.axis.empty()) throw UsageError("--start/--max", "", "the batch-size axis is empty");
}

// Axis points the sweep never ran (above the first OOM, after failures,
// interrupted) as skipped rows; then every row by batch size, bisect points
// in their place and repeats in order.
void add_skipped_rows_and_sort(const SweepResult& sweep, const BatchSweepOptions& options, Report& report) {
  const auto config = config_params(options);
  for (const auto& p : sweep.points)
    if (!p.ran) {
      Row row;
      row.param("batch_size", std::to_string(p.size));
      for (const auto& [name, value] : config) row.param(name, value);
      row.status = RowStatus::skipped;
      row.note = p.outcome.note;
      report.rows.push_back(row);
    }
  std::stable_sort(report.rows.begin(), report.rows.end(),
                   [](const Row& a, const Row& b) { return batch_of(a) < batch_of(b); });
}

// gain_pct: the gain over the previous (smaller) ok batch size, on the
// per-size medians; empty for the smallest.
void add_gains(const std::map<std::int64_t, double>& median_throughput, Report& report) {
  std::map<std::int64_t, double> gain_pct;
  std::optional<double> previous;
  for (const auto& [batch, tp] : median_throughput) {
    gain_pct[batch] = previous ? 100.0 * (tp / *previous - 1.0) : kNotMeasured;
    previous = tp;
  }
  for (auto& row : report.rows) {
    const auto it = gain_pct.find(batch_of(row));
    if (row.status == RowStatus::ok && it != gain_pct.end()) row.metric("gain_pct", it->second);
  }
}

// Every reading of the batch sizes that passed all their repeats: the
// saturation rule takes the medians and the spread of the repeats itself.
std::vector<ThroughputPoint> passed_readings(const Report& report, const std::map<std::int64_t, double>& passed,
                                             const std::string& metric) {
  std::vector<ThroughputPoint> readings;
  for (const Row& row : report.rows) {
    const auto value = row.metric_value(metric);
    if (row.status == RowStatus::ok && value && passed.count(batch_of(row)))
      readings.push_back({static_cast<double>(batch_of(row)), *value});
  }
  return readings;
}

std::string saturation_summary(const Saturation& sat, const BatchSweepOptions& options) {
  const std::string why = plateau_reason(sat, options.saturation, "batch");
  switch (sat.verdict) {
    case PlateauVerdict::placed:
      if (sat.point->size == sat.plateau->size) return describe_point(sat.point, options.metric_name) + ": " + why;
      return describe_point(sat.point, options.metric_name) + ": the first batch at " +
             percent_text(options.saturation.fraction_of_best) + " of the best; from " +
             std::to_string(static_cast<std::int64_t>(sat.plateau->size)) + " on, " + why;
    case PlateauVerdict::too_noisy:
      return "none: " + why;
    case PlateauVerdict::not_reached:
      return "not reached: " + why;
    case PlateauVerdict::no_throughput:
      break;
  }
  return sat.best ? "none: the metric is 0 at every batch" : "none";
}

// The spread of the repeats behind the medians, when there were repeats.
std::string spread_summary(const Saturation& sat) {
  return percent_text(*sat.spread) + " (median over batch sizes of (max - min) / median of the repeats; widest " +
         percent_text(sat.widest->spread) + " at batch " + std::to_string(static_cast<std::int64_t>(sat.widest->size)) +
         ")";
}

// The saturation batch buys (almost) all the throughput; anything above only
// costs memory. Too noisy for a plateau: the first batch at --fraction of the
// best; still rising: the best measured batch. Never below the first batch at
// --fraction of the best, never above the safe maximum.
void recommend_batch(const BatchSweepOptions& options, const Saturation& sat, BatchSweepOutcome& outcome) {
  auto& summary = outcome.report.summary;
  if (!sat.best) {
    summary.emplace_back("recommended_batch", "none: no batch size ran ok");
    return;
  }
  std::optional<ThroughputPoint> pick = sat.best;
  std::string why = "the best measured batch";
  if (sat.point) {
    pick = sat.point;
    why = "the saturation batch";
  } else if (sat.verdict == PlateauVerdict::too_noisy) {
    pick = sat.fraction;
    why = "the first batch at " + percent_text(options.saturation.fraction_of_best) +
          " of the best: too noisy to place a plateau";
  }
  auto batch = static_cast<std::int64_t>(pick->size);
  const auto& safe_max = outcome.sweep.safe_max;
  if (safe_max && batch > *safe_max) {
    batch = *safe_max;
    why = "the safe maximum";
  }
  outcome.recommended_batch = batch;
  summary.emplace_back("recommended_batch", std::to_string(batch) + " (" + why + ")");
  if (options.global_batch)
    summary.emplace_back("gradient_accumulation",
                         plan_accumulation(*options.global_batch, options.data_parallel, batch).explanation);
}

void summarize_sweep(const BatchSweepOptions& options, const Saturation& sat, BatchSweepOutcome& outcome) {
  auto& summary = outcome.report.summary;
  const SweepResult& sweep = outcome.sweep;
  const std::string& metric = options.metric_name;
  // Google Benchmark's real_time: the time per sample this metric implies, so
  // compare.py compares the metric, not the trial's start-up.
  outcome.report.time_metric = metric;
  summary.emplace_back("saturation_batch", saturation_summary(sat, options));
  if (sat.spread) summary.emplace_back("repeat_spread", spread_summary(sat));
  summary.emplace_back("batch_at_" + format_number(100 * options.saturation.fraction_of_best, 0) + "pct_of_best",
                       describe_point(sat.fraction, metric));
  summary.emplace_back("best_batch", describe_point(sat.best, metric));
  if (options.sweep.safety_margin > 0)
    summary.emplace_back("safe_max_batch", sweep.safe_max
                                               ? std::to_string(*sweep.safe_max) + " (max feasible less " +
                                                     format_number(100 * options.sweep.safety_margin, 0) + "%)"
                                               : "none");
  recommend_batch(options, sat, outcome);
  if (!sweep.stop_reason.empty()) summary.emplace_back("stopped", sweep.stop_reason);
}

}  // namespace

std::vector<std::string> substitute_batch(const std::vector<std::string>& args, std::int64_t batch) {
  const std::string placeholder = kBatchPlaceholder, value = std::to_string(batch);
  std::vector<std::string> out;
  for (std::string arg : args) {
    for (auto pos = arg.find(placeholder); pos != std::string::npos; pos = arg.find(placeholder, pos + value.size()))
      arg.replace(pos, placeholder.size(), value);
    out.push_back(std::move(arg));
  }
  return out;
}

BatchSweepOutcome run_batch_sweep(std::string tool, const BatchSweepOptions& options, Environment env) {
  check_options(tool, options);
  BatchSweepOutcome outcome;
  outcome.report = start_report(std::move(tool), std::move(env));
  BatchTrials trials(options, outcome.report);
  SweepOptions sweep_options = options.sweep;
  // A caller's own prediction (a memory model of the program) wins over the
  // fit of what the trials used: it was silently replaced here before.
  if (!sweep_options.predict_largest_fit) sweep_options.predict_largest_fit = [&] { return trials.predict_largest_fit(); };
  outcome.sweep = run_sweep(options.axis, sweep_options,
                            [&](std::int64_t batch, bool from_bisect) { return trials.run_point(batch, from_bisect); });
  trials.rename_metric_in_rows();
  add_skipped_rows_and_sort(outcome.sweep, options, outcome.report);
  add_gains(trials.median_throughput(), outcome.report);

  // The summary names the column the throughput went to.
  BatchSweepOptions named = options;
  named.metric_name = outcome.metric_name = trials.metric_name();
  const Saturation sat = analyze_saturation(
      passed_readings(outcome.report, trials.median_throughput(), named.metric_name), options.saturation);
  outcome.any_ok = !trials.median_throughput().empty();
  if (sat.point) outcome.saturation_batch = static_cast<std::int64_t>(sat.point->size);
  summarize_limits(named, trials, outcome.sweep, outcome.report.summary);
  summarize_sweep(named, sat, outcome);
  for (const auto& warning : summarize_memory_and_warnings(named, trials, outcome.sweep, outcome.report.summary))
    std::cerr << outcome.report.tool << ": warning: " << warning << "\n";
  return outcome;
}

}  // namespace redline
