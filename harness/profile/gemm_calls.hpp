// The recorded cuBLAS calls (their shapes) joined to the kernels they
// launched, through CUPTI's external correlation (call_kernels.hpp). Each
// call with a kernel becomes a GemmCall placed at its first
// kernel's start, so a step gets exactly the FLOPs its kernels ran; a call
// with none (it failed, or its kernel's records were lost) is counted, not
// placed by guess.
#pragma once

#include <cstddef>
#include <vector>

#include "harness/profile/activity.hpp"

namespace redline::profile {

struct GemmJoin {
  std::vector<GemmCall> gemms;
  std::size_t without_kernel = 0;  // recorded calls no kernel in the trace belongs to
};

// `calls` holds the gemmcall records (the recording library's file),
// `trace` the correlations (the injection library's trace); one Trace may
// hold both.
GemmJoin gemm_calls(const Trace& calls, const Trace& trace);

}  // namespace redline::profile
