// The kernels each recorded call launched (a cuBLAS GEMM, an NCCL group),
// through CUPTI's external correlation: the call's external id -> the
// correlation ids of the API calls made inside it -> those launches'
// kernels. What gemm_calls.hpp and nccl_calls.hpp join their records with.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "harness/profile/activity.hpp"
#include "harness/profile/profile_category.hpp"

namespace redline::profile {

struct CallKernels {
  std::int64_t first_start_ns = 0;  // the first kernel's start: where the call falls among the steps
  std::int64_t kernel_ns = 0;       // the kernels' durations, summed
};

// By external id; a call whose kernels the trace lacks is absent.
std::unordered_map<std::int64_t, CallKernels> kernels_by_external_id(const Trace& trace);

// A recorder that wrote nothing, said: `none` ("no NCCL call was recorded"),
// and where the trace holds kernels of `category` (the program did that work
// all the same), how many, then `reach` (why the recorder may not have seen
// the calls).
std::string nothing_recorded(const Trace& trace, Category category, const std::string& none,
                             const std::string& reach);

}  // namespace redline::profile
