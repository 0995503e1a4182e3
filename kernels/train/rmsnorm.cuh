// RMSNorm, y = x / sqrt(mean(x^2) + eps) * w per token row, its backward
// and its weight gradient. bf16 activations and weights, fp32 math, the
// per-row rstd = 1 / sqrt(mean(x^2) + eps) kept in fp32 for the backward.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace redline {

// y and rstd for `rows` rows of `width`.
void rmsnorm_forward(const __nv_bfloat16* x, const __nv_bfloat16* weight, __nv_bfloat16* y, float* rstd,
                     std::int64_t rows, std::int64_t width, float eps, cudaStream_t stream);

// d_x = d(RMSNorm)/dx applied to d_y, plus d_residual when it is not null:
// the gradient that reaches the norm's input around it through the residual
// connection, added here so the sum is rounded to bf16 once. d_x may be
// d_residual.
void rmsnorm_backward(const __nv_bfloat16* d_y, const __nv_bfloat16* x, const __nv_bfloat16* weight,
                      const float* rstd, const __nv_bfloat16* d_residual, __nv_bfloat16* d_x, std::int64_t rows,
                      std::int64_t width, cudaStream_t stream);

// d_weight[j] += sum over rows of d_y[t, j] * x[t, j] * rstd[t], in a fixed
// order (no atomics): the same inputs give the same bits. The rows' chunks
// (norm_grad_chunks in harness/train/activation_memory.hpp) keep their column
// sums in `scratch` until the call's second kernel adds them up, so no other
// stream may touch it meanwhile (the stack lends it cuBLASLt's workspace,
// whose GEMMs run on the same stream); std::invalid_argument when it cannot
// hold one chunk's sums.
void rmsnorm_weight_grad(const __nv_bfloat16* d_y, const __nv_bfloat16* x, const float* rstd, float* d_weight,
                         std::int64_t rows, std::int64_t width, void* scratch, std::size_t scratch_bytes,
                         cudaStream_t stream);

}  // namespace redline
