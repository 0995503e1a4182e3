// Cross-entropy kernels: one block per token row (max, sum of exponentials,
// then the gradient written over the row), and one block for the mean.
#include "kernels/train/cross_entropy.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/train/block_reduce.cuh"

namespace redline {
namespace {

using train_detail::kRowThreads;

__global__ void cross_entropy_rows(__nv_bfloat16* logits, const std::int32_t* targets, float* losses,
                                   std::int64_t vocab, float grad_scale) {
  __shared__ float shared[32];
  const std::int64_t row = blockIdx.x;
  __nv_bfloat16* x = logits + row * vocab;
  const std::int64_t target = targets[row];
  float max_value = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) max_value = fmaxf(max_value, __bfloat162float(x[j]));
  max_value = train_detail::block_max(max_value, shared);
  float sum = 0.0f;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) sum += expf(__bfloat162float(x[j]) - max_value);
  // Read before block_sum's barriers: after them the row is overwritten.
  const float target_logit = __bfloat162float(x[target]);
  sum = train_detail::block_sum(sum, shared);
  const float lse = max_value + logf(sum);
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
    const float p = expf(__bfloat162float(x[j]) - lse);
    x[j] = __float2bfloat16((p - (j == target ? 1.0f : 0.0f)) * grad_scale);
  }
  if (threadIdx.x == 0) losses[row] = lse - target_logit;
}

__global__ void mean_of(const float* values, std::int64_t count, float* mean) {
  __shared__ float shared[32];
  float sum = 0.0f;
  for (std::int64_t i = threadIdx.x; i < count; i += blockDim.x) sum += values[i];
  sum = train_detail::block_sum(sum, shared);
  if (threadIdx.x == 0) *mean = sum / static_cast<float>(count);
}

}  // namespace

void cross_entropy_forward_backward(__nv_bfloat16* logits, const std::int32_t* targets, float* losses,
                                    std::int64_t tokens, std::int64_t vocab, float grad_scale, cudaStream_t stream) {
  cross_entropy_rows<<<static_cast<unsigned>(tokens), kRowThreads, 0, stream>>>(logits, targets, losses, vocab,
                                                                                grad_scale);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

void mean_loss(const float* losses, std::int64_t count, float* mean, cudaStream_t stream) {
  mean_of<<<1, 1024, 0, stream>>>(losses, count, mean);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace redline
