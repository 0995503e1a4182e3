// CUDA-event samples of a case's work. A sample is a batch of back-to-back
// enqueues queued whole behind a StreamBlocker before the GPU starts on it,
// so a kernel of a microsecond is timed on the GPU, not at the host's launch
// rate: up to kMaxCallsPerSample calls, or as many as take about
// `sample_seconds` (events resolve to about half a microsecond). The
// harness's measurement policy decides how many samples make the figure.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <optional>

#include "harness/core/environment.hpp"
#include "harness/measure/measurement.hpp"
#include "kernels/runner/case_row.hpp"
#include "kernels/runner/event_timer.cuh"
#include "kernels/runner/stream_blocker.cuh"

namespace redline {

// A held stream can queue only what fits the launch queue (about a thousand
// launches; a GEMM may take two).
inline constexpr int kMaxCallsPerSample = 128;

// Calls per sample for work whose one call took `estimate_seconds`: enough to
// fill `sample_seconds`, at least 1, at most kMaxCallsPerSample.
int calls_per_sample(double sample_seconds, double estimate_seconds);

struct TimedSamples {
  Measurement measurement;      // seconds per call
  ClocksDuringSamples clocks;   // empty without a reader
};

class SampleTimer {
 public:
  // On `stream`, of the device current now (the blocker belongs to it).
  SampleTimer(cudaStream_t stream, double sample_seconds);

  using Enqueue = std::function<void(int iteration)>;  // iteration: calls since this timing began
  using ReadClocks = std::function<std::optional<GpuReadings>()>;

  // One untimed call first (loads kernels outside a hold), one timed call to
  // size the samples, then samples until `policy` stops. With `read_clocks`,
  // the GPU is read while the samples run, at most every 50 ms: NVML's calls
  // can outlast a short sample, and the gaps they would leave between
  // samples let a power-capped GPU cool. Throws when the blocker's timeout
  // released a sample before it was queued (no trustworthy time).
  TimedSamples time(const MeasurementPolicy& policy, const Enqueue& enqueue, const ReadClocks& read_clocks = {});

 private:
  // Queues `calls` enqueues behind the blocker between the events, releases
  // the hold and returns without waiting for them.
  void queue_sample(int calls, const Enqueue& enqueue, int& next);

  cudaStream_t stream_;
  double sample_seconds_;
  StreamBlocker blocker_;
  EventTimer events_;
};

}  // namespace redline
