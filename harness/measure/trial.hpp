// Judges one batch_sweep trial from how its child process ended and what it
// printed: ok, oom, error or timeout, and the throughput it reported.
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "harness/core/child_process.hpp"
#include "harness/measure/sweep.hpp"

namespace redline {

// Messages frameworks print when device or host memory runs out: PyTorch
// ("CUDA out of memory", torch.OutOfMemoryError, "CUDA error: out of
// memory"), JAX/XLA RESOURCE_EXHAUSTED, the CUDA runtime's
// cudaErrorMemoryAllocation, and C++'s std::bad_alloc.
const std::vector<std::string>& builtin_oom_patterns();

// Patterns match within one line of output (\n or \r ends a line), and only
// the first 4096 characters of a line are searched.
struct TrialRules {
  std::vector<std::regex> oom_patterns;  // built-in plus --oom-regex
  std::optional<std::regex> metric;      // --metric-regex: first group of the last match
};

// Compiles the rules, throwing UsageError naming the flag for a bad regex or
// a metric regex without a capture group.
TrialRules make_trial_rules(const std::vector<std::string>& extra_oom_regexes, const std::string& metric_regex);

struct TrialVerdict {
  PointStatus status = PointStatus::ok;
  std::optional<double> metric;  // from --metric-regex, when given and matched
  std::string note;              // why it is not ok (the telling line of output)
};

TrialVerdict judge_trial(const ChildResult& child, const TrialRules& rules);

// The last non-empty line of output, trimmed to `max_chars`: what a user
// needs to see of a failed trial.
std::string last_output_line(const std::string& output, std::size_t max_chars = 160);

}  // namespace redline
