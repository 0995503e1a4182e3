// The loss: softmax cross-entropy per token fused with its gradient, which
// overwrites the logits in place (llm.c's trick: the stack keeps one T x
// vocab buffer), and the mean of the per-token losses.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace redline {

// For each token row t: losses[t] = logsumexp(logits[t]) - logits[t,
// targets[t]], then logits[t, :] = (softmax(logits[t]) - onehot(target)) *
// grad_scale (1 / T for a mean over T tokens).
void cross_entropy_forward_backward(__nv_bfloat16* logits, const std::int32_t* targets, float* losses,
                                    std::int64_t tokens, std::int64_t vocab, float grad_scale, cudaStream_t stream);

// *mean = sum(losses) / count, summed in a fixed order by one block.
void mean_loss(const float* losses, std::int64_t count, float* mean, cudaStream_t stream);

}  // namespace redline
