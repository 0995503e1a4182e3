// RMSNorm kernels: one block per row for the row reductions, each thread
// reading 8 bf16 at a time (bf16_pack.cuh); the weight gradient's column
// sums over (256-column tile x row chunk) blocks into scratch, then the
// chunks added in a fixed order.
#include "kernels/train/rmsnorm.cuh"

#include "harness/train/activation_memory.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/train/bf16_pack.cuh"
#include "kernels/train/block_reduce.cuh"

namespace redline {
namespace {

using train_detail::block_sum;
using train_detail::kPack;
using train_detail::kRowThreads;
using train_detail::load_pack;
using train_detail::RowPacks;
using train_detail::store_pack;

template <bool kAligned>
__global__ void rmsnorm_rows(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, float* rstd,
                             std::int64_t width, float eps) {
  __shared__ float shared[32];
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * width;
  const RowPacks packs;
  float v[kPack], g[kPack];
  float squares = 0.0f;
  for (std::int64_t j = packs.first; j < width; j += packs.stride) {
    load_pack<kAligned>(x + base + j, width - j, v);
#pragma unroll
    for (int e = 0; e < kPack; ++e) squares += v[e] * v[e];
  }
  const float r = rsqrtf(block_sum(squares, shared) / static_cast<float>(width) + eps);
  // The second read of the row mostly hits L1 or L2: the block read it just now.
  for (std::int64_t j = packs.first; j < width; j += packs.stride) {
    load_pack<kAligned>(x + base + j, width - j, v);
    load_pack<kAligned>(w + j, width - j, g);
#pragma unroll
    for (int e = 0; e < kPack; ++e) v[e] = v[e] * r * g[e];
    store_pack<kAligned>(y + base + j, width - j, v);
  }
  if (threadIdx.x == 0) rstd[blockIdx.x] = r;
}

// With g = d_y o w: d_x = r g - x r^3 mean(g o x). d_x may be d_residual:
// each thread reads a pack of it before writing the same pack.
template <bool kAligned>
__global__ void rmsnorm_backward_rows(const __nv_bfloat16* d_y, const __nv_bfloat16* x, const __nv_bfloat16* w,
                                      const float* rstd, const __nv_bfloat16* d_residual, __nv_bfloat16* d_x,
                                      std::int64_t width) {
  __shared__ float shared[32];
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * width;
  const RowPacks packs;
  float dy[kPack], xv[kPack], g[kPack];
  float dot = 0.0f;
  for (std::int64_t j = packs.first; j < width; j += packs.stride) {
    load_pack<kAligned>(d_y + base + j, width - j, dy);
    load_pack<kAligned>(w + j, width - j, g);
    load_pack<kAligned>(x + base + j, width - j, xv);
#pragma unroll
    for (int e = 0; e < kPack; ++e) dot += dy[e] * g[e] * xv[e];
  }
  const float r = rstd[blockIdx.x];
  const float mean_dot = block_sum(dot, shared) / static_cast<float>(width);
  for (std::int64_t j = packs.first; j < width; j += packs.stride) {
    load_pack<kAligned>(d_y + base + j, width - j, dy);
    load_pack<kAligned>(w + j, width - j, g);
    load_pack<kAligned>(x + base + j, width - j, xv);
    float d[kPack], residual[kPack] = {};
    if (d_residual != nullptr) load_pack<kAligned>(d_residual + base + j, width - j, residual);
#pragma unroll
    for (int e = 0; e < kPack; ++e) d[e] = r * (dy[e] * g[e]) - xv[e] * r * r * r * mean_dot + residual[e];
    store_pack<kAligned>(d_x + base + j, width - j, d);
  }
}

constexpr int kTileThreads = 32, kLanes = 8;
constexpr int kTileColumns = kTileThreads * kPack;

// Block (32, 8) on one 256-column tile and one chunk of rows: each thread
// sums its 8 columns over every 8th row of the chunk, then the 8 lanes'
// sums are added in lane order into the chunk's column sums.
template <bool kAligned>
__global__ void rmsnorm_weight_grad_partials(const __nv_bfloat16* d_y, const __nv_bfloat16* x, const float* rstd,
                                             float* partials, std::int64_t rows, std::int64_t width,
                                             std::int64_t rows_per_chunk) {
  __shared__ float lanes[kLanes][kTileColumns];
  const std::int64_t tile = static_cast<std::int64_t>(blockIdx.x) * kTileColumns;
  const std::int64_t j = tile + static_cast<std::int64_t>(threadIdx.x) * kPack;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.y) * rows_per_chunk;
  const std::int64_t end = rows < first + rows_per_chunk ? rows : first + rows_per_chunk;
  float sum[kPack] = {};
  if (j < width)
    for (std::int64_t t = first + threadIdx.y; t < end; t += kLanes) {
      float dy[kPack], xv[kPack];
      load_pack<kAligned>(d_y + t * width + j, width - j, dy);
      load_pack<kAligned>(x + t * width + j, width - j, xv);
      const float r = rstd[t];
#pragma unroll
      for (int e = 0; e < kPack; ++e) sum[e] += dy[e] * xv[e] * r;
    }
#pragma unroll
  for (int e = 0; e < kPack; ++e) lanes[threadIdx.y][threadIdx.x * kPack + e] = sum[e];
  __syncthreads();
  const int column = static_cast<int>(threadIdx.y) * kTileThreads + static_cast<int>(threadIdx.x);
  if (tile + column >= width) return;
  float total = 0.0f;
  for (int lane = 0; lane < kLanes; ++lane) total += lanes[lane][column];
  partials[static_cast<std::int64_t>(blockIdx.y) * width + tile + column] = total;
}

// d_weight[j] += the chunks' sums of column j, added in chunk order.
__global__ void add_chunk_sums(const float* partials, float* d_weight, std::int64_t chunks, std::int64_t width) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= width) return;
  float total = 0.0f;
  for (std::int64_t c = 0; c < chunks; ++c) total += partials[c * width + j];
  d_weight[j] += total;
}

}  // namespace

void rmsnorm_forward(const __nv_bfloat16* x, const __nv_bfloat16* weight, __nv_bfloat16* y, float* rstd,
                     std::int64_t rows, std::int64_t width, float eps, cudaStream_t stream) {
  const bool aligned = width % kPack == 0 && train_detail::pack_aligned({x, weight, y});
  train_detail::with_alignment(aligned, [&](auto a) {
    rmsnorm_rows<decltype(a)::value><<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(x, weight, y, rstd,
                                                                                              width, eps);
  });
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

void rmsnorm_backward(const __nv_bfloat16* d_y, const __nv_bfloat16* x, const __nv_bfloat16* weight,
                      const float* rstd, const __nv_bfloat16* d_residual, __nv_bfloat16* d_x, std::int64_t rows,
                      std::int64_t width, cudaStream_t stream) {
  const bool aligned = width % kPack == 0 && train_detail::pack_aligned({d_y, x, weight, d_residual, d_x});
  train_detail::with_alignment(aligned, [&](auto a) {
    rmsnorm_backward_rows<decltype(a)::value><<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(
        d_y, x, weight, rstd, d_residual, d_x, width);
  });
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

void rmsnorm_weight_grad(const __nv_bfloat16* d_y, const __nv_bfloat16* x, const float* rstd, float* d_weight,
                         std::int64_t rows, std::int64_t width, void* scratch, std::size_t scratch_bytes,
                         cudaStream_t stream) {
  const NormGradChunks plan = norm_grad_chunks(rows, width, static_cast<std::int64_t>(scratch_bytes));
  float* partials = static_cast<float*>(scratch);
  const dim3 grid(static_cast<unsigned>((width + kTileColumns - 1) / kTileColumns), static_cast<unsigned>(plan.chunks));
  const dim3 block(kTileThreads, kLanes);
  const bool aligned = width % kPack == 0 && train_detail::pack_aligned({d_y, x});
  train_detail::with_alignment(aligned, [&](auto a) {
    rmsnorm_weight_grad_partials<decltype(a)::value><<<grid, block, 0, stream>>>(d_y, x, rstd, partials, rows, width,
                                                                                 plan.rows_per_chunk);
  });
  REDLINE_CUDA_CHECK(cudaGetLastError());
  add_chunk_sums<<<train_detail::grid_for(width), kRowThreads, 0, stream>>>(partials, d_weight, plan.chunks, width);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace redline
