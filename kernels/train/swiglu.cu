// SwiGLU kernels: one thread per 8 elements (one 16-byte access per tensor,
// bf16_pack.cuh), fp32 math per element.
#include "kernels/train/swiglu.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/train/bf16_pack.cuh"
#include "kernels/train/block_reduce.cuh"

namespace redline {
namespace {

using train_detail::kPack;
using train_detail::load_pack;
using train_detail::store_pack;

__device__ inline float sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

__device__ inline std::int64_t pack_start() {
  return (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kPack;
}

template <bool kAligned>
__global__ void swiglu_packs(const __nv_bfloat16* gate, const __nv_bfloat16* up, __nv_bfloat16* act,
                             std::int64_t count) {
  const std::int64_t i = pack_start();
  if (i >= count) return;
  float g[kPack], u[kPack];
  load_pack<kAligned>(gate + i, count - i, g);
  load_pack<kAligned>(up + i, count - i, u);
#pragma unroll
  for (int e = 0; e < kPack; ++e) g[e] = g[e] * sigmoid(g[e]) * u[e];
  store_pack<kAligned>(act + i, count - i, g);
}

template <bool kAligned>
__global__ void swiglu_backward_packs(const __nv_bfloat16* d_act, const __nv_bfloat16* gate, const __nv_bfloat16* up,
                                      __nv_bfloat16* d_gate, __nv_bfloat16* d_up, std::int64_t count) {
  const std::int64_t i = pack_start();
  if (i >= count) return;
  float d[kPack], g[kPack], u[kPack], dg[kPack], du[kPack];
  load_pack<kAligned>(d_act + i, count - i, d);
  load_pack<kAligned>(gate + i, count - i, g);
  load_pack<kAligned>(up + i, count - i, u);
#pragma unroll
  for (int e = 0; e < kPack; ++e) {
    const float s = sigmoid(g[e]);
    dg[e] = d[e] * u[e] * s * (1.0f + g[e] * (1.0f - s));
    du[e] = d[e] * g[e] * s;
  }
  store_pack<kAligned>(d_gate + i, count - i, dg);
  store_pack<kAligned>(d_up + i, count - i, du);
}

unsigned pack_grid(std::int64_t count) { return train_detail::grid_for((count + kPack - 1) / kPack); }

}  // namespace

void swiglu_forward(const __nv_bfloat16* gate, const __nv_bfloat16* up, __nv_bfloat16* act, std::int64_t count,
                    cudaStream_t stream) {
  // A count that is not a multiple of 8 only makes the last pack partial.
  train_detail::with_alignment(train_detail::pack_aligned({gate, up, act}), [&](auto a) {
    swiglu_packs<decltype(a)::value><<<pack_grid(count), train_detail::kRowThreads, 0, stream>>>(gate, up, act, count);
  });
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

void swiglu_backward(const __nv_bfloat16* d_act, const __nv_bfloat16* gate, const __nv_bfloat16* up,
                     __nv_bfloat16* d_gate, __nv_bfloat16* d_up, std::int64_t count, cudaStream_t stream) {
  train_detail::with_alignment(train_detail::pack_aligned({d_act, gate, up, d_gate, d_up}), [&](auto a) {
    swiglu_backward_packs<decltype(a)::value><<<pack_grid(count), train_detail::kRowThreads, 0, stream>>>(
        d_act, gate, up, d_gate, d_up, count);
  });
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace redline
