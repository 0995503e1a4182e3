// Cross-entropy kernels: one block per token row (max and sum of
// exponentials in one read, then the gradient written over the row), 8 bf16
// per 16-byte access (bf16_pack.cuh): the logits are T x vocab, the step's
// largest activation. One block for the mean.
#include "kernels/train/cross_entropy.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/train/bf16_pack.cuh"
#include "kernels/train/block_reduce.cuh"

namespace redline {
namespace {

using train_detail::kPack;
using train_detail::kRowThreads;
using train_detail::load_pack;
using train_detail::RowPacks;
using train_detail::store_pack;

// fmaxf drops a NaN; this keeps it, so a NaN logit reaches the loss.
__device__ inline float max_keeping_nan(float a, float b) { return b > a || isnan(b) ? b : a; }

// Padding past the row's end (a partial last pack) must not enter the max
// or the sum: `valid` counts the pack's real elements. The max and the sum
// of exponentials come from one read of the row (an online softmax: the
// running sum rescaled whenever the running max grows), so the row is read
// twice and written once; at a vocabulary of 128K a block's row is 256 KB and
// the rows in flight overflow L2, so each pass is one over HBM.
template <bool kAligned>
__global__ void cross_entropy_rows(__nv_bfloat16* logits, const std::int32_t* targets, float* losses,
                                   std::int64_t vocab, float grad_scale) {
  __shared__ float shared[32];
  const std::int64_t row = blockIdx.x;
  __nv_bfloat16* x = logits + row * vocab;
  const std::int64_t target = targets[row];
  const RowPacks packs;
  float v[kPack];
  float running_max = -INFINITY, running_sum = 0.0f;  // sum of exp(v - running_max)
  for (std::int64_t j = packs.first; j < vocab; j += packs.stride) {
    load_pack<kAligned>(x + j, vocab - j, v);
    const std::int64_t valid = vocab - j;
    float pack_max = -INFINITY;
#pragma unroll
    for (int e = 0; e < kPack; ++e)
      if (e < valid) pack_max = max_keeping_nan(pack_max, v[e]);
    if (pack_max == -INFINITY) continue;  // every element -inf: each adds 0 at any finite max
    if (pack_max > running_max) {
      running_sum *= expf(running_max - pack_max);  // 0 * exp(-inf) on the first pack: 0
      running_max = pack_max;
    }
#pragma unroll
    for (int e = 0; e < kPack; ++e)
      if (e < valid) running_sum += expf(v[e] - running_max);  // NaN in, NaN out
  }
  const float max_value = train_detail::block_max(running_max, shared);
  // A thread with nothing to add (no elements, or all -inf) has sum 0.
  const float sum_part = running_sum != 0.0f ? running_sum * expf(running_max - max_value) : 0.0f;
  // Read before block_sum's barriers: after them the row is overwritten.
  const float target_logit = __bfloat162float(x[target]);
  const float sum = train_detail::block_sum(sum_part, shared);
  const float lse = max_value + logf(sum);
  for (std::int64_t j = packs.first; j < vocab; j += packs.stride) {
    load_pack<kAligned>(x + j, vocab - j, v);
#pragma unroll
    for (int e = 0; e < kPack; ++e) v[e] = (expf(v[e] - lse) - (j + e == target ? 1.0f : 0.0f)) * grad_scale;
    store_pack<kAligned>(x + j, vocab - j, v);
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
  const bool aligned = vocab % kPack == 0 && train_detail::pack_aligned({logits});
  train_detail::with_alignment(aligned, [&](auto a) {
    cross_entropy_rows<decltype(a)::value><<<static_cast<unsigned>(tokens), kRowThreads, 0, stream>>>(
        logits, targets, losses, vocab, grad_scale);
  });
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

void mean_loss(const float* losses, std::int64_t count, float* mean, cudaStream_t stream) {
  mean_of<<<1, 1024, 0, stream>>>(losses, count, mean);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace redline
