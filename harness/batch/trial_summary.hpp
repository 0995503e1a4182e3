// The batch sweep's summary lines about its trials: where the throughput came
// from, the largest batch that fit and the first that did not, peak memory
// against batch, and warnings when the metric may not be what it seems.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "harness/batch/batch_sweep.hpp"
#include "harness/batch/batch_trials.hpp"

namespace redline {

using SummaryLines = std::vector<std::pair<std::string, std::string>>;

// How the metric line describes a throughput read from the trials' wall time.
inline constexpr const char* kWallTimeThroughput = "batch x --steps / trial wall time, start-up included";

// Whether a sweep's recorded metric line (its JSON summary's "metric") says
// the throughput, and so step_time_ms, came from the trials' wall time.
bool throughput_from_wall_time(const std::string& recorded_metric);

// metric, max_feasible_batch and first_oom_batch: the summary's first lines.
// first_oom_batch never names a batch that did not run.
void summarize_limits(const BatchSweepOptions& options, const BatchTrials& trials, const SweepResult& sweep,
                      SummaryLines& summary);

// memory_fit (the fitted bytes per sample and fixed part), predicted_max_batch
// (when the bisection started from one), gpu_memory (when NVML could not
// measure it) and metric_warning. Returns the warnings, for stderr too.
std::vector<std::string> summarize_memory_and_warnings(const BatchSweepOptions& options, const BatchTrials& trials,
                                                       const SweepResult& sweep, SummaryLines& summary);

// Why a --metric-regex looks like a time rather than a throughput: its text
// names a time, or its value fell with every larger batch (3 or more);
// empty when it does not.
std::string time_like_metric(const std::string& metric_regex, const std::map<std::int64_t, double>& median_throughput);

}  // namespace redline
