#include "harness/batch/batch_sweep.hpp"

#include <algorithm>
#include <iostream>
#include <limits>
#include <map>

#include "harness/batch/accumulation.hpp"
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

void check_options(const BatchSweepOptions& options) {
  if (options.command.empty()) throw UsageError("missing COMMAND: use batch_sweep [OPTIONS] -- COMMAND [ARGS...]");
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
      row.status = "skipped";
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
    if (row.status == "ok" && it != gain_pct.end()) row.metric("gain_pct", it->second);
  }
}

std::string saturation_summary(const Saturation& sat, const BatchSweepOptions& options) {
  if (sat.plateau)
    return describe_point(sat.plateau, options.metric_name) + ": doubling adds < " +
           format_number(100 * options.saturation.plateau_gain, 0) + "%";
  if (!sat.best) return "none";
  return sat.fraction ? "not reached: throughput still rising at the largest batch"
                      : "none: the metric is 0 at every batch";
}

// The saturation batch buys (almost) all the throughput; anything above only
// costs memory. Without a plateau, the best measured batch; never above the
// safe maximum.
void recommend_batch(const BatchSweepOptions& options, const Saturation& sat, BatchSweepOutcome& outcome) {
  auto& summary = outcome.report.summary;
  if (!sat.best) {
    summary.emplace_back("recommended_batch", "none: no batch size ran ok");
    return;
  }
  auto pick = static_cast<std::int64_t>((sat.plateau ? sat.plateau : sat.best)->size);
  std::string why = sat.plateau ? "the saturation batch" : "the best measured batch";
  const auto& safe_max = outcome.sweep.safe_max;
  if (safe_max && pick > *safe_max) {
    pick = *safe_max;
    why = "the safe maximum";
  }
  outcome.recommended_batch = pick;
  summary.emplace_back("recommended_batch", std::to_string(pick) + " (" + why + ")");
  if (options.global_batch)
    summary.emplace_back("gradient_accumulation",
                         plan_accumulation(*options.global_batch, options.data_parallel, pick).explanation);
}

void summarize_sweep(const BatchSweepOptions& options, const Saturation& sat, BatchSweepOutcome& outcome) {
  auto& summary = outcome.report.summary;
  const SweepResult& sweep = outcome.sweep;
  const std::string& metric = options.metric_name;
  summary.emplace_back("saturation_batch", saturation_summary(sat, options));
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
  check_options(options);
  BatchSweepOutcome outcome;
  outcome.report = start_report(std::move(tool), std::move(env));
  BatchTrials trials(options, outcome.report);
  SweepOptions sweep_options = options.sweep;
  sweep_options.predict_largest_fit = [&] { return trials.predict_largest_fit(); };
  outcome.sweep = run_sweep(options.axis, sweep_options,
                            [&](std::int64_t batch, bool from_bisect) { return trials.run_point(batch, from_bisect); });
  trials.rename_metric_in_rows();
  add_skipped_rows_and_sort(outcome.sweep, options, outcome.report);
  add_gains(trials.median_throughput(), outcome.report);

  std::vector<ThroughputPoint> series;
  for (const auto& [batch, tp] : trials.median_throughput()) series.push_back({static_cast<double>(batch), tp});
  const Saturation sat = analyze_saturation(series, options.saturation);
  outcome.any_ok = !series.empty();
  // The summary names the column the throughput went to.
  BatchSweepOptions named = options;
  named.metric_name = outcome.metric_name = trials.metric_name();
  summarize_limits(named, trials, outcome.sweep, outcome.report.summary);
  summarize_sweep(named, sat, outcome);
  for (const auto& warning : summarize_memory_and_warnings(named, trials, outcome.sweep, outcome.report.summary))
    std::cerr << outcome.report.tool << ": warning: " << warning << "\n";
  return outcome;
}

}  // namespace redline
