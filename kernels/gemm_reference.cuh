// The independent check of a GEMM result: a plain tiled fp32 kernel recomputes
// R = scale_a * scale_b * op(A) op(B) from the same stored inputs and reduces
// how far C is from it, without ever storing R (an M x N fp32 copy would
// need more memory than the GEMM under test at the largest sweep points).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "harness/gpu/gemm_dtype.hpp"

namespace redline {

struct ReferenceDifference {
  double sum_squared_difference = 0;  // sum of (C - R)^2 over the finite elements of C
  double sum_squared_reference = 0;   // sum of R^2 over all elements
  std::int64_t nonfinite = 0;         // NaN or Inf elements of C
  // ||C - R||_F / ||R||_F over the finite elements of C (nonfinite is
  // reported separately, a NaN would hide how far the rest is off).
  double relative_error() const;
};

// `a`, `b` and `c` are stored as `dtype` stores them (harness/gpu/gemm_dtype.hpp:
// fp8 C is bf16) in `layout`, with leading_dims(layout, m, n, k). Any
// m, n, k >= 1; with `batch`, every batch of the strided batch is compared
// and the sums cover them all. Runs on `stream`, synchronizes it and
// returns the sums. Throws std::invalid_argument for sizes out of range,
// CudaError for CUDA failures.
ReferenceDifference compare_with_reference(GemmDtype dtype, GemmLayout layout, std::int64_t m, std::int64_t n,
                                           std::int64_t k, const void* a, const void* b, const void* c,
                                           float scale_a, float scale_b, cudaStream_t stream,
                                           const GemmBatch& batch = {});

}  // namespace redline
