// SwiGLU kernels: one thread per element, fp32 math.
#include "kernels/train/swiglu.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/train/block_reduce.cuh"

namespace redline {
namespace {

__device__ inline float sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

__global__ void swiglu_elements(const __nv_bfloat16* gate, const __nv_bfloat16* up, __nv_bfloat16* act,
                                std::int64_t count) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const float g = __bfloat162float(gate[i]);
  act[i] = __float2bfloat16(g * sigmoid(g) * __bfloat162float(up[i]));
}

__global__ void swiglu_backward_elements(const __nv_bfloat16* d_act, const __nv_bfloat16* gate,
                                         const __nv_bfloat16* up, __nv_bfloat16* d_gate, __nv_bfloat16* d_up,
                                         std::int64_t count) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const float g = __bfloat162float(gate[i]), u = __bfloat162float(up[i]), d = __bfloat162float(d_act[i]);
  const float s = sigmoid(g);
  d_gate[i] = __float2bfloat16(d * u * s * (1.0f + g * (1.0f - s)));
  d_up[i] = __float2bfloat16(d * g * s);
}

}  // namespace

void swiglu_forward(const __nv_bfloat16* gate, const __nv_bfloat16* up, __nv_bfloat16* act, std::int64_t count,
                    cudaStream_t stream) {
  swiglu_elements<<<train_detail::grid_for(count), train_detail::kRowThreads, 0, stream>>>(gate, up, act, count);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

void swiglu_backward(const __nv_bfloat16* d_act, const __nv_bfloat16* gate, const __nv_bfloat16* up,
                     __nv_bfloat16* d_gate, __nv_bfloat16* d_up, std::int64_t count, cudaStream_t stream) {
  swiglu_backward_elements<<<train_detail::grid_for(count), train_detail::kRowThreads, 0, stream>>>(
      d_act, gate, up, d_gate, d_up, count);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace redline
