// Measurement policy: warm up, then repeat timed runs until the spread is
// small enough or a cap is hit. The one place that decides how long a point
// is measured; tools only supply "run once and return the measured seconds".
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "harness/measure/stats.hpp"

namespace redline {

struct MeasurementPolicy {
  // Warm-up runs until both are met: clocks ramp and handles get created.
  int warmup_iterations = 1;
  double warmup_seconds = 0;
  // Timed repetitions: at least min, at most max.
  int min_repetitions = 5;
  int max_repetitions = 1000;
  // Noise stop: once min_repetitions are in, stop as soon as the coefficient
  // of variation of the samples so far is under this (0 disables it).
  double target_cv = 0.02;
  // The noise stop waits until the timed repetitions have run this long, by
  // the host clock (0: no wait). Why: a GPU at its power limit swings its
  // clock over tens of milliseconds, so samples that agree with each other
  // over a few milliseconds can all be one phase of the swing (a burst).
  // It only holds the noise stop back: the time and repetition caps still
  // end the samples, so a min_seconds beyond max_seconds waits for the cap.
  double min_seconds = 0;
  // Time cap over the timed repetitions, by the host clock (0 disables it).
  double max_seconds = 10;
  // Whether Ctrl-C ends the samples early (StopReason::interrupted). Off
  // where the count must be whole: ranks of a collective that each take
  // their own samples (one that stopped early would leave the others waiting
  // in an operation it never joins), or a figure that needs every sample.
  bool stops_on_interrupt = true;

  // Throws UsageError (flag "policy") when the numbers contradict each other.
  void validate() const;
};

// Exactly `repetitions` timed runs and no warm-up: no noise stop, no time
// cap (the caller decides about Ctrl-C). For loops whose count is the
// user's (-n iterations, --steps) or must match on every rank.
MeasurementPolicy fixed_count_policy(int repetitions);

enum class StopReason { noise_target, repetition_cap, time_cap, interrupted };
std::string to_string(StopReason reason);

struct Measurement {
  std::vector<double> samples;  // in the order measured
  Summary summary;
  StopReason stop = StopReason::repetition_cap;
  int warmup_iterations = 0;
};

// `run_once` performs the work once and returns its measured time (or any
// per-repetition figure), which must be positive and finite: anything else
// throws std::runtime_error rather than passing as a fast result. `now_seconds` is the wall clock used for the
// warm-up time and the time cap; it defaults to a steady clock.
Measurement measure(const MeasurementPolicy& policy, const std::function<double()>& run_once,
                    const std::function<double()>& now_seconds = {});

}  // namespace redline
