#include "harness/batch/trial_summary.hpp"

#include <cmath>
#include <regex>

#include "harness/core/units.hpp"

namespace redline {
namespace {

// 64K, 8.5M, -1.2M: sizes as the tools read them.
std::string bytes_text(double bytes) {
  const std::string size = format_size(static_cast<std::uint64_t>(std::llround(std::fabs(bytes))));
  return (bytes < 0 ? "-" : "") + size;
}

std::string how_read(const ThroughputSourceUse& use, const BatchSweepOptions& options) {
  if (use.source == "--metric-regex") return "from --metric-regex, the last match";
  if (use.source == kWallTimeSource) return kWallTimeThroughput;
  std::string how = "from " + use.source + ": ";
  switch (use.kind) {
    case ReadingKind::samples_per_s: how += "as printed"; break;
    case ReadingKind::steps_per_s: how += "batch x steps/s"; break;
    case ReadingKind::step_seconds: how += "batch / step time"; break;
    case ReadingKind::tokens_per_s:
      how += options.tokens_per_sample ? "tokens/s / --tokens-per-sample" : "tokens/s as printed";
      break;
  }
  const int kept = use.readings - use.skipped;
  if (use.skipped > 0)
    how += ", median of " + std::to_string(kept) + " lines after skipping " + std::to_string(use.skipped);
  else if (use.readings > 1)
    how += ", median of " + std::to_string(use.readings) + " lines";
  return how;
}

std::string describe_metric(const BatchSweepOptions& options, const BatchTrials& trials) {
  if (!trials.source()) return trials.metric_name() + " (no trial ran ok)";
  return trials.metric_name() + " (" + how_read(*trials.source(), options) +
         (options.repeats > 1 ? "; median of repeats" : "") + ")";
}

void add_memory_fit(const BatchTrials& trials, SummaryLines& summary) {
  const std::string what =
      trials.gpu_memory_measured() ? "peak GPU memory (NVML)" : "peak host RSS of the process tree";
  const auto fit = fit_memory(trials.memory_points());
  if (!fit) {
    summary.emplace_back("memory_fit", "none: " + what + " did not grow over two or more batch sizes that fit");
    return;
  }
  summary.emplace_back("memory_fit", bytes_text(fit->bytes_per_sample) + " per sample + " +
                                         bytes_text(fit->fixed_bytes) + " fixed (" + what + ", batches " +
                                         std::to_string(fit->first_batch) + ".." + std::to_string(fit->last_batch) +
                                         ")");
}

}  // namespace

bool throughput_from_wall_time(const std::string& recorded_metric) {
  return recorded_metric.find(kWallTimeThroughput) != std::string::npos;
}

void summarize_limits(const BatchSweepOptions& options, const BatchTrials& trials, const SweepResult& sweep,
                      SummaryLines& summary) {
  summary.emplace_back("metric", describe_metric(options, trials));
  summary.emplace_back("max_feasible_batch", sweep.largest_fit
                                                 ? std::to_string(*sweep.largest_fit) +
                                                       (sweep.largest_fit_is_exact ? " (exact, by bisection)" : "")
                                                 : "none");
  std::string first_oom = "none: no batch ran";
  if (sweep.first_oom)
    first_oom = std::to_string(*sweep.first_oom);
  else if (sweep.largest_run)
    first_oom = "none up to " + std::to_string(*sweep.largest_run) + " (the largest batch that ran)";
  summary.emplace_back("first_oom_batch", first_oom);
}

std::vector<std::string> summarize_memory_and_warnings(const BatchSweepOptions& options, const BatchTrials& trials,
                                                       const SweepResult& sweep, SummaryLines& summary) {
  add_memory_fit(trials, summary);
  if (const auto& p = trials.prediction(); p && sweep.predicted_fit)
    summary.emplace_back("predicted_max_batch",
                         std::to_string(p->batch) + " (the fit over batches " + std::to_string(p->fit.first_batch) +
                             ".." + std::to_string(p->fit.last_batch) + " at the " + bytes_text(p->reached_bytes) +
                             " the OOM trial at " + std::to_string(p->reached_at) + " reached; " +
                             (sweep.prediction_used ? "the bisection began there)"
                                                    : "outside the range left to search: a plain bisection)"));
  if (!trials.gpu_memory_measured() && !trials.gpu_memory_unavailable().empty())
    summary.emplace_back("gpu_memory", "not measured: " + trials.gpu_memory_unavailable());
  std::vector<std::string> warnings;
  if (trials.source() && trials.source()->source == kWallTimeSource)
    warnings.push_back("no step time or throughput line was recognised in the output, so " + trials.metric_name() +
                       " is " + kWallTimeThroughput + ": give --step-time-regex or --metric-regex");
  if (const std::string why = time_like_metric(options.metric_regex, trials.median_throughput()); !why.empty())
    warnings.push_back("--metric-regex '" + options.metric_regex + "' looks like a time, not a throughput (" + why +
                       "): give a step time with --step-time-regex instead");
  std::string joined;
  for (const auto& w : warnings) joined += (joined.empty() ? "" : "; ") + w;
  if (!joined.empty()) summary.emplace_back("metric_warning", joined);
  return warnings;
}

std::string time_like_metric(const std::string& metric_regex, const std::map<std::int64_t, double>& median_throughput) {
  if (metric_regex.empty()) return "";
  static const std::regex names_a_time(R"(\btime\b|\bms\b|latency|elapsed|s/it\b|\bsec/|per[ _]step)",
                                       std::regex::ECMAScript | std::regex::icase);
  if (std::regex_search(metric_regex, names_a_time)) return "it reads a time";
  if (median_throughput.size() < 3) return "";
  std::optional<double> previous;
  for (const auto& [batch, value] : median_throughput) {
    if (previous && !(value < *previous)) return "";
    previous = value;
  }
  return "it fell with every larger batch";
}

}  // namespace redline
