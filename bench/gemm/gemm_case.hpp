// One GEMM shape as a case of the GPU case runner: cuBLASLt's heuristic
// choice (or the fastest of its top candidates) on random inputs in rotating
// buffer sets, verified against the reference, and explained after timing
// by the quantization model with the tile cuBLASLt really ran.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/gpu/gemm_dtype.hpp"
#include "harness/gemm/gemm_peak_search.hpp"
#include "harness/gpu/gpu_peaks.hpp"
#include "kernels/runner/gpu_case.hpp"

namespace redline::gemm {

struct GemmCaseSpec {
  GemmSize size;
  GemmDtype dtype = GemmDtype::bf16;
  GemmLayout layout = GemmLayout::tn;
  std::int64_t batch = 1;  // strided-batched GEMMs per call
  // Parameters that name the case beyond dtype, layout and shape (layer and
  // pass for `model`, timing=sustained for `peak`); they become row parameters.
  std::vector<std::pair<std::string, std::string>> extra_params;
};

// What every GEMM case of a run shares.
struct GemmCaseOptions {
  int heuristic_candidates = 1;  // --algos
  std::optional<GpuPeaks> peaks;  // the datasheet; nullopt: no percentages
};

// "gemm/dtype:bf16/layout:tn/m:4096/n:4096/k:4096[/batch:64][/layer:qkv/pass:fwd]".
CaseKey gemm_case_key(const GemmCaseSpec& spec);

std::unique_ptr<GpuCase> make_gemm_case(const GemmCaseSpec& spec, const GemmCaseOptions& options);

// The spec of each size, at one dtype, layout and batch count.
std::vector<GemmCaseSpec> gemm_specs(const std::vector<GemmSize>& sizes, GemmDtype dtype, GemmLayout layout,
                                     std::int64_t batch = 1);

}  // namespace redline::gemm
