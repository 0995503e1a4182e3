// Checks of an attention path's results: against the CPU fp64 reference
// (harness/attention/attention_reference.hpp) on small shapes, and against
// another GPU result (the unfused path's, itself checked against the CPU)
// on shapes too large for the CPU. Relative Frobenius error per tensor,
// NaN never passing, with one tolerance per dtype.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/attention/attention_reference.hpp"
#include "harness/attention/group_check.hpp"
#include "harness/attention/attention_shape.hpp"
#include "harness/gpu/gemm_dtype.hpp"
#include "kernels/attention_cudnn.cuh"
#include "kernels/attention_tensors.cuh"
#include "kernels/runner/gpu_case.hpp"

namespace redline {

// The largest accepted relative Frobenius error for `dtype` (bf16, fp16,
// fp8_e4m3); see attention_check.cpp for the reasoning. Throws
// std::invalid_argument for other dtypes.
double attention_tolerance(GemmDtype dtype);

// `count` elements of a device tensor stored in `dtype`, as doubles divided
// by `scale` (FP8's stored = real * scale; 1 otherwise). Synchronous.
std::vector<double> attention_tensor_to_host(const void* data, std::int64_t count, GemmDtype dtype,
                                             double scale = 1.0);

struct AttentionTensorError {
  std::string tensor;  // "o", "lse", "dq", "dk", "dv"
  TensorError error;
};

struct AttentionCheck {
  double tolerance = 0;
  std::vector<AttentionTensorError> tensors;

  bool passed() const;
  // "dk: relative error 0.31 (tolerance 0.02), 0 non-finite; ..." for the
  // tensors that failed; empty when all passed.
  std::string failure() const;
  // For the GPU case runner: rel_error_<tensor> figures, `wrong` as the
  // count of non-finite elements (at least 1) when failed.
  CaseCheck case_check() const;
};

// FP8 tensors are read back with `scales`: the scales of whatever wrote
// them (CudnnAttention::fp8_scales() after calibrate_fp8), or, when null,
// the defaults (attention_fp8_scales()) for tensors no calibrated object
// wrote. Ignored for bf16 and fp16.
//
// Reads Q, K, V (and dO) back from the device, runs the CPU reference and
// compares O and LSE (and dQ, dK, dV with `backward`). The CPU reference
// costs O(b * a_q * s^2 * d): keep it for small shapes. Synchronizes.
AttentionCheck check_attention_against_reference(const AttentionShape& shape, GemmDtype dtype,
                                                 const AttentionTensors& result, bool backward,
                                                 const AttentionFp8Scales* scales = nullptr);

// Compares `result` (in `dtype`) with `reference` (in `reference_dtype`,
// e.g. the unfused path's bf16 output) tensor by tensor, streaming through
// host memory in chunks, so any shape that fits on the device can be
// checked. The tolerance is the looser of the two dtypes', doubled: both
// sides carry their own rounding. Synchronizes.
// For shapes too large for the full CPU reference: the first and the last
// KV group (batch 0, KV head 0; last batch, last KV head) read back and
// checked on sampled rows with the exact math in double
// (harness/attention/group_check.hpp): O, LSE and dQ on `query_samples` query
// rows, dK and dV on `key_samples` key rows per group. Synchronizes.
AttentionCheck check_attention_on_groups(const AttentionShape& shape, GemmDtype dtype, const AttentionTensors& result,
                                         bool backward, const AttentionFp8Scales* scales = nullptr,
                                         std::int64_t query_samples = 64, std::int64_t key_samples = 16);

// The check a benchmark case runs before it is timed: the full CPU
// reference where it costs at most `reference_flop` (4 b a_q s^2 d, about a
// second of the CPU), else check_attention_on_groups.
inline constexpr double kFullReferenceFlop = 1e9;
AttentionCheck check_attention(const AttentionShape& shape, GemmDtype dtype, const AttentionTensors& result,
                               bool backward, const AttentionFp8Scales* scales = nullptr,
                               double reference_flop = kFullReferenceFlop);

// `scales` for `result`, `reference_scales` for `reference`.
AttentionCheck check_attention_against_gpu(const AttentionShape& shape, GemmDtype dtype,
                                           const AttentionTensors& result, GemmDtype reference_dtype,
                                           const AttentionTensors& reference, bool backward,
                                           const AttentionFp8Scales* scales = nullptr,
                                           const AttentionFp8Scales* reference_scales = nullptr);

}  // namespace redline
