// RMSNorm kernels: one block per row for the row reductions; the weight
// gradient's column sums by 32-column tiles with a fixed summation order.
#include "kernels/train/rmsnorm.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/train/block_reduce.cuh"

namespace redline {
namespace {

using train_detail::block_sum;
using train_detail::kRowThreads;

__global__ void rmsnorm_rows(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, float* rstd,
                             std::int64_t width, float eps) {
  __shared__ float shared[32];
  const std::int64_t row = blockIdx.x;
  const __nv_bfloat16* xr = x + row * width;
  float squares = 0.0f;
  for (std::int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    const float v = __bfloat162float(xr[j]);
    squares += v * v;
  }
  const float r = rsqrtf(block_sum(squares, shared) / static_cast<float>(width) + eps);
  for (std::int64_t j = threadIdx.x; j < width; j += blockDim.x)
    y[row * width + j] = __float2bfloat16(__bfloat162float(xr[j]) * r * __bfloat162float(w[j]));
  if (threadIdx.x == 0) rstd[row] = r;
}

// With g = d_y o w: d_x = r g - x r^3 mean(g o x).
__global__ void rmsnorm_backward_rows(const __nv_bfloat16* d_y, const __nv_bfloat16* x, const __nv_bfloat16* w,
                                      const float* rstd, const __nv_bfloat16* d_residual, __nv_bfloat16* d_x,
                                      std::int64_t width) {
  __shared__ float shared[32];
  const std::int64_t row = blockIdx.x, base = row * width;
  float dot = 0.0f;
  for (std::int64_t j = threadIdx.x; j < width; j += blockDim.x)
    dot += __bfloat162float(d_y[base + j]) * __bfloat162float(w[j]) * __bfloat162float(x[base + j]);
  const float r = rstd[row];
  const float mean_dot = block_sum(dot, shared) / static_cast<float>(width);
  for (std::int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    const float g = __bfloat162float(d_y[base + j]) * __bfloat162float(w[j]);
    float d = r * g - __bfloat162float(x[base + j]) * r * r * r * mean_dot;
    if (d_residual != nullptr) d += __bfloat162float(d_residual[base + j]);
    d_x[base + j] = __float2bfloat16(d);
  }
}

constexpr int kColumns = 32, kLanes = 8;

// Block (32, 8): each of 32 columns summed by 8 lanes over every 8th row,
// then the 8 partials added in lane order.
__global__ void rmsnorm_weight_grad_columns(const __nv_bfloat16* d_y, const __nv_bfloat16* x, const float* rstd,
                                            float* d_weight, std::int64_t rows, std::int64_t width) {
  __shared__ float partial[kLanes][kColumns];
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kColumns + threadIdx.x;
  float sum = 0.0f;
  if (j < width)
    for (std::int64_t t = threadIdx.y; t < rows; t += kLanes)
      sum += __bfloat162float(d_y[t * width + j]) * __bfloat162float(x[t * width + j]) * rstd[t];
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || j >= width) return;
  float total = 0.0f;
  for (int lane = 0; lane < kLanes; ++lane) total += partial[lane][threadIdx.x];
  d_weight[j] += total;
}

}  // namespace

void rmsnorm_forward(const __nv_bfloat16* x, const __nv_bfloat16* weight, __nv_bfloat16* y, float* rstd,
                     std::int64_t rows, std::int64_t width, float eps, cudaStream_t stream) {
  rmsnorm_rows<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(x, weight, y, rstd, width, eps);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

void rmsnorm_backward(const __nv_bfloat16* d_y, const __nv_bfloat16* x, const __nv_bfloat16* weight,
                      const float* rstd, const __nv_bfloat16* d_residual, __nv_bfloat16* d_x, std::int64_t rows,
                      std::int64_t width, cudaStream_t stream) {
  rmsnorm_backward_rows<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(d_y, x, weight, rstd, d_residual,
                                                                                 d_x, width);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

void rmsnorm_weight_grad(const __nv_bfloat16* d_y, const __nv_bfloat16* x, const float* rstd, float* d_weight,
                         std::int64_t rows, std::int64_t width, cudaStream_t stream) {
  const dim3 block(kColumns, kLanes);
  rmsnorm_weight_grad_columns<<<static_cast<unsigned>((width + kColumns - 1) / kColumns), block, 0, stream>>>(
      d_y, x, rstd, d_weight, rows, width);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace redline
