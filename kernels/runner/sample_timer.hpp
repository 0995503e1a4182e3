// CUDA-event samples of a case's work. A sample is a batch of back-to-back
// enqueues queued whole behind a StreamBlocker before the GPU starts on it,
// so a kernel of a microsecond is timed on the GPU, not at the host's launch
// rate: up to kMaxCallsPerSample calls, or as many as take about
// `sample_seconds` (events resolve to about half a microsecond). The
// harness's measurement policy decides how many samples make the figure.
// Work of hundreds of launches per call (a whole training step) is timed one
// call a sample, not held (SampleShape).
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

// How a timer makes its samples.
struct SampleShape {
  // A sample is as many calls as take about this long (at least 1) ...
  double sample_seconds = 2e-3;
  // ... and at most this many, 1 to kMaxCallsPerSample: fewer where one call
  // is many launches, so a held sample still fits the launch queue.
  int max_calls = kMaxCallsPerSample;
  // Queued whole behind the StreamBlocker before the GPU starts on it. Off
  // for work that launches more than the launch queue holds (a training step
  // of thousands of launches would wait for queue space the held stream
  // never frees, until the blocker's timeout) and whose host-side enqueue
  // pace is part of what is measured; then a sample is timed as it is
  // enqueued, and with max_calls 1 nothing runs untimed but the policy's
  // warm-up, so a caller's warm-up count is exactly the policy's.
  bool held = true;
};

struct TimedSamples {
  Measurement measurement;      // seconds per call
  ClocksDuringSamples clocks;   // empty without a reader
};

class SampleTimer {
 public:
  // On `stream`, of the device current now (the blocker belongs to it).
  // Throws std::invalid_argument for a shape out of range.
  SampleTimer(cudaStream_t stream, SampleShape shape);
  SampleTimer(cudaStream_t stream, double sample_seconds) : SampleTimer(stream, SampleShape{sample_seconds}) {}

  using Enqueue = std::function<void(int iteration)>;  // iteration: calls since this timing began
  using ReadClocks = std::function<std::optional<GpuReadings>()>;
  // Called after each sample the policy sees, warm-up ones included, once
  // its time is read (the stream has finished it): per-sample bookkeeping
  // (a loss, phase times) without a second wait. The last
  // measurement.samples.size() calls are the timed samples'.
  using AfterSample = std::function<void()>;

  // Held: one untimed call first (loads kernels outside a hold). Then, when
  // a sample may hold more than one call, one timed call to size the
  // samples. Then samples until `policy` stops. With `read_clocks`, the GPU
  // is read while the samples run, at most every 50 ms: NVML's calls can
  // outlast a short sample, and the gaps they would leave between samples
  // let a power-capped GPU cool. Throws when the blocker's timeout released
  // a sample before it was queued (no trustworthy time).
  TimedSamples time(const MeasurementPolicy& policy, const Enqueue& enqueue, const ReadClocks& read_clocks = {},
                    const AfterSample& after_sample = {});

 private:
  // Queues `calls` enqueues between the events (behind the blocker when
  // held, then releases the hold) and returns without waiting for them.
  void queue_sample(int calls, const Enqueue& enqueue, int& next);

  cudaStream_t stream_;
  SampleShape shape_;
  StreamBlocker blocker_;
  EventTimer events_;
};

}  // namespace redline
