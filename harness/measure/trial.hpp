// Judges one batch-sweep trial from how its child process ended and what it
// printed: ok, oom, error or timeout, and the throughput it reported.
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "harness/core/child_process.hpp"
#include "harness/measure/sweep.hpp"
#include "harness/measure/throughput_reading.hpp"

namespace redline {

// Messages frameworks print when device or host memory runs out: PyTorch
// (CUDA and HIP out of memory, torch.OutOfMemoryError, the CPU allocator's
// DefaultCPUAllocator and alloc_cpu messages), TensorFlow's
// ResourceExhaustedError, JAX/XLA RESOURCE_EXHAUSTED, Python's MemoryError
// (numpy's _ArrayMemoryError too), cuBLAS's CUBLAS_STATUS_ALLOC_FAILED, the
// CUDA runtime's cudaErrorMemoryAllocation and C++'s std::bad_alloc.
const std::vector<std::string>& builtin_oom_patterns();

// How a trial's throughput is read (at most one of the two regexes).
struct MetricOptions {
  std::string metric_regex;     // --metric-regex: a throughput, first group of the last match
  std::string step_time_regex;  // --step-time-regex: a step time, median after --skip-steps
  std::string step_time_unit = "ms";
  int skip_steps = 1;  // --skip-steps: per-step lines dropped first (compilation, warm-up)
};

// Patterns match within one line of output (\n or \r ends a line), and only
// the first 4096 characters of a line are searched.
struct TrialRules {
  std::vector<std::regex> oom_patterns;  // built-in plus --oom-regex
  std::optional<std::regex> metric;      // --metric-regex
  std::optional<LineFormat> step_time;   // --step-time-regex with its unit
  int skip_steps = 1;
};

// Compiles the rules, throwing UsageError naming the flag for a bad regex, a
// regex without a capture group, both regexes at once, or a unit that is
// not s, ms or us.
TrialRules make_trial_rules(const std::vector<std::string>& extra_oom_regexes, const MetricOptions& metric = {});

struct TrialVerdict {
  PointStatus status = PointStatus::ok;
  // What an ok trial printed of its speed: the regex's reading, else the
  // first trainer line recognised; nullopt when nothing was (the caller
  // falls back to wall time).
  std::optional<ThroughputReading> reading;
  std::string note;  // why it is not ok (the telling line of output)
};

TrialVerdict judge_trial(const ChildResult& child, const TrialRules& rules);

// The last non-empty line of output, trimmed to `max_chars`: what a user
// needs to see of a failed trial.
std::string last_output_line(const std::string& output, std::size_t max_chars = 160);

}  // namespace redline
