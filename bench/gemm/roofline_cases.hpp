// The two ceilings a GEMM sits under, as cases of the GPU case runner: a
// 1 GiB device-to-device copy (HBM GB/s; far beyond any L2, so it streams
// from HBM) and a non-tensor FP32 FMA kernel (TFLOPS), each against the
// datasheet.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "harness/gpu/gpu_peaks.hpp"
#include "kernels/runner/gpu_case.hpp"

namespace redline::gemm {

// roofline/kernel:copy and roofline/kernel:fma.
std::vector<std::unique_ptr<GpuCase>> roofline_cases(const std::optional<GpuPeaks>& peaks);

}  // namespace redline::gemm
