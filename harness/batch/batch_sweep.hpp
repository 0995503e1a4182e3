// The batch sweep's engine: runs the user's training command once per batch size
// (each trial a fresh child process), judges each trial, sweeps upward until
// the first OOM, optionally bisects to the exact maximum, then finds the
// saturation batch and builds the report. The tool above it only
// parses flags into BatchSweepOptions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/report/report.hpp"
#include "harness/measure/saturation.hpp"
#include "harness/measure/sweep.hpp"

namespace redline {

inline constexpr const char* kBatchPlaceholder = "{bs}";
inline constexpr const char* kBatchVariable = "REDLINE_BATCH_SIZE";

struct BatchSweepOptions {
  std::vector<std::string> command;  // {bs} in any argument becomes the batch size
  std::vector<std::int64_t> axis;    // ascending batch sizes
  SweepOptions sweep;
  SaturationOptions saturation;
  int repeats = 1;                 // trials per batch size; the median is used
  double timeout_seconds = 1800;   // per trial
  std::int64_t steps = 1;          // training steps one trial runs (wall-time throughput)
  std::string metric_regex;        // a throughput as printed; empty: see below
  std::string metric_name = "samples_per_s";  // --metric-regex's column
  // Without --metric-regex: a step time (--step-time-regex), else the lines
  // common trainers print, else batch x steps / wall time.
  std::string step_time_regex;
  std::string step_time_unit = "ms";
  int skip_steps = 1;                            // per-step lines dropped first
  std::optional<double> tokens_per_sample;       // adds tokens_per_s (or turns tokens/s into samples/s)
  std::vector<std::string> oom_regexes;
  std::optional<std::int64_t> global_batch;
  std::int64_t data_parallel = 1;
  // Figures a trial prints beside its throughput: (metric name, regex with one
  // number group); the last match in the trial's output becomes that metric
  // of its row (empty when it printed none). A tool whose trials print
  // their measured memory reads it this way.
  std::vector<std::pair<std::string, std::string>> extra_metrics;
  // Watches each trial from outside the engine (a profiler): the variables
  // the trial's process gets beside the batch's, and what it adds to the
  // trial's row once the trial has ended (before the row is kept).
  std::function<std::vector<std::pair<std::string, std::string>>(std::int64_t batch, int repetition)> trial_environment;
  std::function<void(Row& row, std::int64_t batch, int repetition)> trial_ended;
  // The trials run under a profiler, whose cost is in their figures: they
  // are another configuration (its own history series), not a regression.
  bool profiled = false;
  bool echo_output = false;  // stream each trial's output to stderr
  int progress = -1;         // -1: when stderr is a terminal
};

struct BatchSweepOutcome {
  Report report;
  SweepResult sweep;
  std::string metric_name;  // the throughput's column (samples_per_s, or what --metric-name or the trainer said)
  std::optional<std::int64_t> recommended_batch;
  std::optional<std::int64_t> saturation_batch;  // the saturation point, where one was placed
  bool any_ok = false;
};

// Replaces every {bs} in `args` with `batch`.
std::vector<std::string> substitute_batch(const std::vector<std::string>& args, std::int64_t batch);

// `tool` names the report's rows (the calling tool's own name). Throws
// UsageError for bad options (bad regex, missing command...).
BatchSweepOutcome run_batch_sweep(std::string tool, const BatchSweepOptions& options, Environment env);

}  // namespace redline
