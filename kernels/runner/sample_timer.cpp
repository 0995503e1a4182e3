#include "kernels/runner/sample_timer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/core/clock.hpp"
#include "kernels/cuda_check.cuh"

namespace redline {

int calls_per_sample(double sample_seconds, double estimate_seconds) {
  return static_cast<int>(std::clamp(std::ceil(sample_seconds / std::max(estimate_seconds, 1e-7)), 1.0,
                                     static_cast<double>(kMaxCallsPerSample)));
}

SampleTimer::SampleTimer(cudaStream_t stream, SampleShape shape) : stream_(stream), shape_(shape) {
  if (!(shape.sample_seconds >= 0) || !std::isfinite(shape.sample_seconds))
    throw std::invalid_argument("SampleTimer: sample_seconds must be finite and not negative");
  if (shape.max_calls < 1 || shape.max_calls > kMaxCallsPerSample)
    throw std::invalid_argument("SampleTimer: max_calls must be 1 to " + std::to_string(kMaxCallsPerSample));
}

void SampleTimer::queue_sample(int calls, const Enqueue& enqueue, int& next) {
  if (!shape_.held) {
    events_.start(stream_);
    for (int i = 0; i < calls; ++i) enqueue(next++);
    events_.stop(stream_);
    return;
  }
  // Released on every path: an exception while held would otherwise leave
  // the stream spinning until the timeout, and the blocker unusable.
  struct Hold {
    StreamBlocker& blocker;
    ~Hold() { blocker.release(); }
  };
  blocker_.block(stream_);
  const Hold hold{blocker_};
  events_.start(stream_);
  for (int i = 0; i < calls; ++i) enqueue(next++);
  events_.stop(stream_);
}

TimedSamples SampleTimer::time(const MeasurementPolicy& policy, const Enqueue& enqueue, const ReadClocks& read_clocks,
                               const AfterSample& after_sample) {
  int next = 0;
  std::vector<std::optional<GpuReadings>> readings;  // one slot per sample, warm-up included
  constexpr double kReadingInterval = 0.05;
  double last_read = -kReadingInterval;
  auto timed = [&](int calls) {
    queue_sample(calls, enqueue, next);
    // Read while the sample runs, not after it: the GPU under load.
    if (read_clocks) {
      const bool due = steady_seconds() - last_read >= kReadingInterval;
      readings.push_back(due ? read_clocks() : std::nullopt);
      if (due) last_read = steady_seconds();
    }
    const double seconds = events_.elapsed_seconds();
    if (shape_.held && blocker_.timed_out())
      throw std::runtime_error("the stream was released by its timeout before the sample was queued: no "
                               "trustworthy time");
    return seconds;
  };
  if (shape_.held) {
    enqueue(next++);
    REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  int per_sample = 1;
  if (shape_.max_calls > 1) {
    per_sample = std::min(calls_per_sample(shape_.sample_seconds, timed(1)), shape_.max_calls);
    readings.clear();
  }
  TimedSamples result;
  result.measurement = measure(policy, [&] {
    const double seconds = timed(per_sample) / per_sample;
    if (after_sample) after_sample();
    return seconds;
  });
  if (read_clocks) result.clocks = clocks_during_samples(readings, result.measurement.warmup_iterations);
  return result;
}

}  // namespace redline
