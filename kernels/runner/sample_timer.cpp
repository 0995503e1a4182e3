#include "kernels/runner/sample_timer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "harness/core/clock.hpp"
#include "kernels/cuda_check.cuh"

namespace redline {

int calls_per_sample(double sample_seconds, double estimate_seconds) {
  return static_cast<int>(std::clamp(std::ceil(sample_seconds / std::max(estimate_seconds, 1e-7)), 1.0,
                                     static_cast<double>(kMaxCallsPerSample)));
}

SampleTimer::SampleTimer(cudaStream_t stream, double sample_seconds) : stream_(stream), sample_seconds_(sample_seconds) {}

void SampleTimer::queue_sample(int calls, const Enqueue& enqueue, int& next) {
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

TimedSamples SampleTimer::time(const MeasurementPolicy& policy, const Enqueue& enqueue, const ReadClocks& read_clocks) {
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
    if (blocker_.timed_out())
      throw std::runtime_error("the stream was released by its timeout before the sample was queued: no "
                               "trustworthy time");
    return seconds;
  };
  enqueue(next++);
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  const double estimate = timed(1);
  readings.clear();
  const int per_sample = calls_per_sample(sample_seconds_, estimate);
  TimedSamples result;
  result.measurement = measure(policy, [&] { return timed(per_sample) / per_sample; });
  if (read_clocks) result.clocks = clocks_during_samples(readings, result.measurement.warmup_iterations);
  return result;
}

}  // namespace redline
