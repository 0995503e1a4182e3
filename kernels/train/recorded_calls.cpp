#include "kernels/train/recorded_calls.cuh"

#include <stdexcept>

#include "kernels/runner/sample_timer.hpp"

namespace redline {

double time_each_alone(const RecordedCalls& calls, const MeasurementPolicy& policy, cudaStream_t stream) {
  // The case runner's sample length: a call of a millisecond or more is one
  // or two calls a sample, events' half a microsecond negligible.
  SampleTimer timer(stream, SampleShape{.sample_seconds = 2e-3, .max_calls = kMaxRecordedCallsPerSample, .held = true});
  double total_ms = 0;
  for (const auto& call : calls) {
    const Measurement m = timer.time(policy, [&](int) { call(); }).measurement;
    if (m.stop == StopReason::interrupted) throw std::runtime_error("interrupted before every call was timed");
    total_ms += m.summary.median * 1e3;
  }
  return total_ms;
}

}  // namespace redline
