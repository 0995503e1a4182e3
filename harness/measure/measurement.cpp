#include "harness/measure/measurement.hpp"

#include <chrono>
#include <cmath>
#include <stdexcept>

#include "harness/core/clock.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline {

void MeasurementPolicy::validate() const {
  if (warmup_iterations < 0)
    throw UsageError("warm-up iterations", std::to_string(warmup_iterations), "must not be negative");
  if (warmup_seconds < 0)
    throw UsageError("warm-up seconds", format_number(warmup_seconds, 3), "must not be negative");
  if (min_repetitions < 1)
    throw UsageError("repetitions", std::to_string(min_repetitions), "must be at least 1");
  if (max_repetitions < min_repetitions)
    throw UsageError("max repetitions", std::to_string(max_repetitions),
                     "must be at least the minimum repetitions (" + std::to_string(min_repetitions) + ")");
  if (target_cv < 0) throw UsageError("target CV", format_number(target_cv, 4), "must not be negative");
  if (max_seconds < 0) throw UsageError("max seconds", format_number(max_seconds, 3), "must not be negative");
  if (min_seconds < 0) throw UsageError("min seconds", format_number(min_seconds, 3), "must not be negative");
}

MeasurementPolicy fixed_count_policy(int repetitions) {
  MeasurementPolicy policy;
  policy.warmup_iterations = 0;
  policy.warmup_seconds = 0;
  policy.min_repetitions = policy.max_repetitions = repetitions;
  policy.target_cv = 0;
  policy.min_seconds = 0;
  policy.max_seconds = 0;
  return policy;
}

std::string to_string(StopReason reason) {
  switch (reason) {
    case StopReason::noise_target: return "noise_target";
    case StopReason::repetition_cap: return "repetition_cap";
    case StopReason::time_cap: return "time_cap";
    case StopReason::interrupted: return "interrupted";
  }
  return "unknown";
}

namespace {

// The samples' coefficient of variation as they come (Welford's update), as
// summarize() computes it (sample stddev over |mean|), without re-sorting all
// of them at every repetition: the noise stop asks after each one.
class RunningCv {
 public:
  void add(double x) {
    ++count_;
    const double delta = x - mean_;
    mean_ += delta / static_cast<double>(count_);
    squares_ += delta * (x - mean_);
  }
  double cv() const {
    if (count_ < 2 || mean_ == 0) return 0;
    return std::sqrt(squares_ / static_cast<double>(count_ - 1)) / std::fabs(mean_);
  }

 private:
  std::size_t count_ = 0;
  double mean_ = 0;
  double squares_ = 0;  // the sum of squared deviations from the mean
};

}  // namespace

Measurement measure(const MeasurementPolicy& policy, const std::function<double()>& run_once,
                    const std::function<double()>& now_seconds) {
  policy.validate();
  const std::function<double()> now = now_seconds ? now_seconds : steady_seconds;
  Measurement m;

  const double warmup_start = now();
  while (m.warmup_iterations < policy.warmup_iterations || now() - warmup_start < policy.warmup_seconds) {
    if (policy.stops_on_interrupt && interrupted()) {
      m.stop = StopReason::interrupted;
      return m;
    }
    run_once();
    ++m.warmup_iterations;
  }

  const double timed_start = now();
  RunningCv noise;
  for (;;) {
    if (policy.stops_on_interrupt && interrupted()) {
      m.stop = StopReason::interrupted;
      break;
    }
    const double sample = run_once();
    // A timer that reads zero, negative or NaN is broken: never summarise it.
    if (!(sample > 0) || !std::isfinite(sample))
      throw std::runtime_error("measurement: a repetition measured " + format_number(sample, 9) +
                               "; a time must be positive and finite");
    m.samples.push_back(sample);
    noise.add(sample);
    const auto n = static_cast<int>(m.samples.size());
    if (n < policy.min_repetitions) continue;
    if (n >= policy.max_repetitions) {
      m.stop = StopReason::repetition_cap;
      break;
    }
    if (policy.target_cv > 0 && n >= 2 && now() - timed_start >= policy.min_seconds &&
        noise.cv() < policy.target_cv) {
      m.stop = StopReason::noise_target;
      break;
    }
    if (policy.max_seconds > 0 && now() - timed_start >= policy.max_seconds) {
      m.stop = StopReason::time_cap;
      break;
    }
  }
  m.summary = summarize(m.samples);
  return m;
}

}  // namespace redline
