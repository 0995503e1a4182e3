// A training step's calls of one kind (its GEMMs, its attention), recorded
// as the step enqueued them, so each can be enqueued again by itself and
// timed alone: the step-time target compares the step with the sum of its
// GEMM and attention times measured alone.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

namespace redline {

// Each entry enqueues one call again on the pointers and plan it ran with.
using RecordedCalls = std::vector<std::function<void()>>;

// Every call once untimed, then `repetitions` times back to back between two
// CUDA events on `stream`: the sum over the calls of the mean time per
// call, in milliseconds. A call that accumulates (beta = 1) accumulates again:
// time after the step's results are read.
double time_each_alone(const RecordedCalls& calls, int repetitions, cudaStream_t stream);

}  // namespace redline
