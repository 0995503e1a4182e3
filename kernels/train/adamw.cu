// AdamW and the fp32 -> bf16 cast: one thread per element, fp32 math with
// the bias corrections formed once in double on the host.
#include "kernels/train/adamw.cuh"

#include <cmath>
#include <stdexcept>

#include "kernels/cuda_check.cuh"
#include "kernels/train/block_reduce.cuh"

namespace redline {
namespace {

struct AdamWStep {
  float lr, beta1, beta2, eps, decay, correction1, correction2;
};

__global__ void adamw_elements(float* master, const float* grad, float* m, float* v, __nv_bfloat16* weights,
                               std::int64_t count, AdamWStep s) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const float g = grad[i];
  const float m_new = s.beta1 * m[i] + (1.0f - s.beta1) * g;
  const float v_new = s.beta2 * v[i] + (1.0f - s.beta2) * g * g;
  m[i] = m_new;
  v[i] = v_new;
  const float m_hat = m_new / s.correction1, v_hat = v_new / s.correction2;
  const float w = master[i];
  const float updated = w - s.lr * (m_hat / (sqrtf(v_hat) + s.eps) + s.decay * w);
  master[i] = updated;
  weights[i] = __float2bfloat16(updated);
}

__global__ void cast_elements(const float* in, __nv_bfloat16* out, std::int64_t count) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) out[i] = __float2bfloat16(in[i]);
}

}  // namespace

void adamw_update(float* master, const float* grad, float* m, float* v, __nv_bfloat16* weights, std::int64_t count,
                  const AdamWSettings& settings, std::int64_t step, bool decay, cudaStream_t stream) {
  if (step < 1) throw std::invalid_argument("adamw_update: step " + std::to_string(step) + " is below 1");
  const AdamWStep s{static_cast<float>(settings.lr),
                    static_cast<float>(settings.beta1),
                    static_cast<float>(settings.beta2),
                    static_cast<float>(settings.eps),
                    decay ? static_cast<float>(settings.weight_decay) : 0.0f,
                    static_cast<float>(1.0 - std::pow(settings.beta1, static_cast<double>(step))),
                    static_cast<float>(1.0 - std::pow(settings.beta2, static_cast<double>(step)))};
  adamw_elements<<<train_detail::grid_for(count), train_detail::kRowThreads, 0, stream>>>(master, grad, m, v, weights,
                                                                                          count, s);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

void cast_to_bf16(const float* master, __nv_bfloat16* weights, std::int64_t count, cudaStream_t stream) {
  cast_elements<<<train_detail::grid_for(count), train_detail::kRowThreads, 0, stream>>>(master, weights, count);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace redline
