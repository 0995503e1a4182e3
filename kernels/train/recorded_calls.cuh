// A training step's calls of one kind (its GEMMs, its attention), recorded
// as the step enqueued them, so each can be enqueued again by itself and
// timed alone: the step-time target compares the step with the sum of its
// GEMM and attention times measured alone.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

#include "harness/measure/measurement.hpp"

namespace redline {

// Each entry enqueues one call again on the pointers and plan it ran with.
using RecordedCalls = std::vector<std::function<void()>>;

// A recorded call may be many launches (the unfused attention's backward:
// its layout copies, GEMMs and softmax kernels, about twenty), and a held
// sample must fit the launch queue (about a thousand), so a sample holds at
// most this many calls.
inline constexpr int kMaxRecordedCallsPerSample = 16;

// Each call timed by itself on `stream` through the case runner's sample
// timer (kernels/runner/sample_timer.hpp): one untimed call, held samples of
// back-to-back calls (as many as take about 2 ms, at most
// kMaxRecordedCallsPerSample), as many as `policy` takes. Returns the sum over
// the calls of each one's median time per call, in milliseconds. A call
// that accumulates (beta = 1) accumulates again, as many times as it runs:
// time after the step's results are read. Throws std::runtime_error when
// Ctrl-C cut a call's samples short.
double time_each_alone(const RecordedCalls& calls, const MeasurementPolicy& policy, cudaStream_t stream);

}  // namespace redline
