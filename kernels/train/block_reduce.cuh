// The block-wide fp32 sum the training kernels' row reductions share (one
// block per row: RMSNorm, cross-entropy, the loss sum). Device code only.
#pragma once

#include <cuda_runtime.h>

namespace redline::train_detail {

// Every thread of the block gets the sum of `value` over the block.
// `shared` holds one partial per warp (32 floats); the leading barrier keeps
// a second call from overwriting partials a slow warp is still reading.
// blockDim.x must be a multiple of 32.
__device__ inline float block_sum(float value, float* shared) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  __syncthreads();
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  value = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : 0.0f;
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

__device__ inline float block_max(float value, float* shared) {
  for (int offset = 16; offset > 0; offset /= 2) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  __syncthreads();
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  value = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : -INFINITY;
  for (int offset = 16; offset > 0; offset /= 2) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

constexpr int kRowThreads = 256;

// Blocks for `count` elements at `threads` per block, one element each.
inline unsigned grid_for(long long count, int threads = kRowThreads) {
  return static_cast<unsigned>((count + threads - 1) / threads);
}

}  // namespace redline::train_detail
