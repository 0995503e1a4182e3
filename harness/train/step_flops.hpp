// The FLOPs of one training step, as the training-step tool states them:
//   model FLOPs (MFU): 6 x N_matmul x tokens (forward 2N, backward 4N) plus
//     attention's score GEMMs, 3 x the forward's 4 b a_q d s(s+1)/2 per layer
//     (causal: the exact count of unmasked scores); recompute does not count.
//   hardware FLOPs (HFU): the model FLOPs plus what is computed again: the
//     fused attention backward's recompute of the scores (0.5 x its forward,
//     the 2.5x backward of harness/attention's convention), and in `full`
//     mode each layer's forward run again (2 N_layer tokens + its attention
//     forward). `selective` recomputes norms and SwiGLU: no matmul FLOPs.
// N_matmul: the parameters GEMMs multiply per token (parameter_counts().matmul():
// every projection and the logits, not the embedding gather or the norms).
#pragma once

#include <cstdint>

#include "harness/train/activation_memory.hpp"
#include "harness/train/model_config.hpp"

namespace redline {

struct StepFlops {
  double model = 0;     // MFU's numerator
  double hardware = 0;  // HFU's: model + recompute
  double attention = 0; // the attention part of `model` (3 x forward scores, all layers)
};

// One micro-batch's forward and backward: mbs x seq tokens. The attention
// path changes only the hardware FLOPs: the unfused GEMMs compute all s^2
// scores (causal or not) and its backward reruns the whole forward.
StepFlops step_flops(const ModelConfig& config, std::int64_t mbs, std::int64_t seq, Recompute mode,
                     AttentionChoice attention = AttentionChoice::cudnn);

}  // namespace redline
