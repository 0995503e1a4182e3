#include "harness/batch/batch_sweep.hpp"

#include <algorithm>
#include <limits>
#include <iostream>
#include <map>

#include "harness/batch/accumulation.hpp"
#include "harness/core/child_process.hpp"
#include "harness/report/console_table.hpp"
#include "harness/core/progress.hpp"
#include "harness/measure/stats.hpp"
#include "harness/measure/trial.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline {
namespace {

std::string describe_point(const std::optional<ThroughputPoint>& p, const std::string& metric) {
  if (!p) return "none";
  return std::to_string(static_cast<std::int64_t>(p->size)) + " (" + human_number(p->throughput) + " " + metric + ")";
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

BatchSweepOutcome run_batch_sweep(const BatchSweepOptions& options, Environment env) {
  if (options.command.empty()) throw UsageError("missing COMMAND: use batch_sweep [OPTIONS] -- COMMAND [ARGS...]");
  if (!find_executable(options.command.front()))
    throw UsageError("COMMAND", options.command.front(), "not found or not executable (searched PATH)");
  if (options.axis.empty()) throw UsageError("--start/--max", "", "the batch-size axis is empty");
  const TrialRules rules = make_trial_rules(options.oom_regexes, options.metric_regex);
  const Progress progress(options.progress);
  const std::string& metric = options.metric_name;

  BatchSweepOutcome outcome;
  outcome.report = start_report("batch_sweep", std::move(env));
  Report& report = outcome.report;
  std::map<std::int64_t, double> median_throughput;  // per ok batch size
  int trials_run = 0;

  auto run_point = [&](std::int64_t batch, bool from_bisect) -> PointOutcome {
    std::vector<double> throughputs;
    for (int r = 0; r < options.repeats; ++r) {
      ChildSpec spec;
      spec.argv = substitute_batch(options.command, batch);
      spec.extra_env = {{kBatchVariable, std::to_string(batch)}};
      spec.timeout_seconds = options.timeout_seconds;
      if (options.echo_output) spec.on_output = [](std::string_view text) { std::cerr << text << std::flush; };
      progress.line("[trial " + std::to_string(++trials_run) + "] batch " + std::to_string(batch) +
                    (options.repeats > 1 ? " (repeat " + std::to_string(r + 1) + "/" + std::to_string(options.repeats) + ")" : "") +
                    (from_bisect ? " [bisect]" : "") + " ...");
      const ChildResult child = run_child(spec);
      const TrialVerdict verdict = judge_trial(child, rules);

      Row row;
      row.param("batch_size", std::to_string(batch));
      row.repetition = r;
      row.status = to_string(verdict.status);
      row.note = verdict.status == PointStatus::ok ? (from_bisect ? "bisect" : "") : verdict.note;
      // Only an ok trial measured anything: the other rows keep empty metrics.
      const double nan = std::numeric_limits<double>::quiet_NaN();
      const bool ok = verdict.status == PointStatus::ok;
      const double samples = static_cast<double>(batch) * static_cast<double>(options.steps);
      const double throughput = !ok ? nan : verdict.metric ? *verdict.metric : samples / child.wall_seconds;
      row.metric(metric, throughput);
      row.metric("step_time_ms", ok ? 1e3 * child.wall_seconds / static_cast<double>(options.steps) : nan);
      row.metric("trial_time_s", ok ? child.wall_seconds : nan);
      report.rows.push_back(row);
      progress.line("  -> " + row.status + (verdict.status == PointStatus::ok ? ": " + human_number(throughput) + " " + metric : ": " + verdict.note) +
                    " (" + format_number(child.wall_seconds, 1) + " s)");

      if (verdict.status != PointStatus::ok) return {verdict.status, verdict.note};
      throughputs.push_back(throughput);
    }
    median_throughput[batch] = summarize(throughputs).median;
    return {PointStatus::ok, ""};
  };

  outcome.sweep = run_sweep(options.axis, options.sweep, run_point);
  for (const auto& p : outcome.sweep.points)
    if (!p.ran) {
      Row row;
      row.param("batch_size", std::to_string(p.size));
      row.status = "skipped";
      row.note = p.outcome.note;
      report.rows.push_back(row);
    }

  // Rows by batch size (bisect points in their place), repeats in order.
  std::stable_sort(report.rows.begin(), report.rows.end(), [](const Row& a, const Row& b) {
    return std::stoll(a.params.front().second) < std::stoll(b.params.front().second);
  });

  // Gain over the previous (smaller) ok batch size, on the per-size medians.
  std::map<std::int64_t, double> gain_pct;
  std::optional<double> previous;
  for (const auto& [batch, tp] : median_throughput) {
    gain_pct[batch] = previous ? 100.0 * (tp / *previous - 1.0) : std::numeric_limits<double>::quiet_NaN();
    previous = tp;
  }
  for (auto& row : report.rows) {
    const auto batch = std::stoll(row.params.front().second);
    auto it = gain_pct.find(batch);
    if (row.status == "ok" && it != gain_pct.end()) row.metric("gain_pct", it->second);
  }

  std::vector<ThroughputPoint> series;
  for (const auto& [batch, tp] : median_throughput) series.push_back({static_cast<double>(batch), tp});
  const Saturation sat = analyze_saturation(series, options.saturation);
  outcome.any_ok = !series.empty();

  auto& summary = report.summary;
  const SweepResult& sweep = outcome.sweep;
  summary.emplace_back("metric", metric + (options.metric_regex.empty()
                                               ? " (batch x --steps / trial wall time, start-up included)"
                                               : " (from --metric-regex, median of repeats)"));
  summary.emplace_back("max_feasible_batch",
                       sweep.largest_fit ? std::to_string(*sweep.largest_fit) +
                                               (sweep.largest_fit_is_exact ? " (exact, by bisection)" : "")
                                         : "none");
  summary.emplace_back("first_oom_batch", sweep.first_oom ? std::to_string(*sweep.first_oom)
                                                          : "none up to " + std::to_string(options.axis.back()));
  summary.emplace_back("saturation_batch",
                       sat.plateau ? describe_point(sat.plateau, metric) + ": doubling adds < " +
                                         format_number(100 * options.saturation.plateau_gain, 0) + "%"
                                   : std::string(!sat.best       ? "none"
                                                 : sat.fraction ? "not reached: throughput still rising at the largest batch"
                                                                : "none: the metric is 0 at every batch"));
  summary.emplace_back("batch_at_" + format_number(100 * options.saturation.fraction_of_best, 0) + "pct_of_best",
                       describe_point(sat.fraction, metric));
  summary.emplace_back("best_batch", describe_point(sat.best, metric));
  if (options.sweep.safety_margin > 0)
    summary.emplace_back("safe_max_batch", sweep.safe_max ? std::to_string(*sweep.safe_max) + " (max feasible less " +
                                                                format_number(100 * options.sweep.safety_margin, 0) + "%)"
                                                          : "none");
  if (sat.best) {
    // The saturation batch buys (almost) all the throughput; anything above
    // only costs memory. Without a plateau, the best measured batch.
    auto pick = static_cast<std::int64_t>((sat.plateau ? sat.plateau : sat.best)->size);
    std::string why = sat.plateau ? "the saturation batch" : "the best measured batch";
    if (sweep.safe_max && pick > *sweep.safe_max) {
      pick = *sweep.safe_max;
      why = "the safe maximum";
    }
    outcome.recommended_batch = pick;
    summary.emplace_back("recommended_batch", std::to_string(pick) + " (" + why + ")");
    if (options.global_batch)
      summary.emplace_back("gradient_accumulation",
                           plan_accumulation(*options.global_batch, options.data_parallel, pick).explanation);
  } else {
    summary.emplace_back("recommended_batch", "none: no batch size ran ok");
  }
  if (!sweep.stop_reason.empty()) summary.emplace_back("stopped", sweep.stop_reason);
  return outcome;
}

}  // namespace redline
