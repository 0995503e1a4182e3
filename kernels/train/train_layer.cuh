// One decoder layer's forward, recompute and backward on caller buffers
// (model_config.hpp describes the layer). The stack decides where each
// tensor lives: a saved tensor of that layer, or the backward's working set
// when the recompute mode dropped it (activation_memory.hpp).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "harness/train/activation_memory.hpp"
#include "harness/train/model_config.hpp"
#include "kernels/train/train_attention.cuh"
#include "kernels/train/train_gemms.cuh"
#include "kernels/train/train_parameters.cuh"

namespace redline {

// The layer's activations, named as activation_memory's table.
struct LayerActivations {
  __nv_bfloat16 *x = nullptr, *n1 = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  __nv_bfloat16 *h1 = nullptr, *n2 = nullptr, *gate = nullptr, *up = nullptr, *act = nullptr;
  float *rstd1 = nullptr, *lse = nullptr, *rstd2 = nullptr;
};

// The backward's working set (backward_working_set's first ten tensors).
// The layer's output gradient arrives in d_residual_a and its input
// gradient leaves there; d_residual_b holds d h1 in between.
struct LayerGradients {
  __nv_bfloat16 *d_residual_a = nullptr, *d_residual_b = nullptr, *d_n = nullptr, *d_o = nullptr, *d_q = nullptr;
  __nv_bfloat16 *d_k = nullptr, *d_v = nullptr, *d_gate = nullptr, *d_up = nullptr, *d_act = nullptr;
};

struct LayerContext {
  const ModelConfig* config = nullptr;
  std::int64_t mbs = 0, seq = 0;
  TrainGemms* gemms = nullptr;
  const TrainAttention* attention = nullptr;
  const TrainParameters* parameters = nullptr;
  cudaStream_t stream = nullptr;
  std::int64_t tokens() const { return mbs * seq; }
};

// The layer's forward into `a`; the output (x + attention + MLP) into
// `out`, or, with out null, not at all (a full recompute needs everything
// but the output).
void layer_forward(const LayerContext& c, std::int64_t layer, const LayerActivations& a, __nv_bfloat16* out);

// What `mode` dropped, rebuilt from what it kept: nothing (none), n1, n2
// and act (selective), or the whole forward from x (full).
void layer_recompute(const LayerContext& c, std::int64_t layer, const LayerActivations& a, Recompute mode);

// The layer's backward: weight gradients added into the fp32 gradients,
// d_residual_a turned from d out into d x.
void layer_backward(const LayerContext& c, std::int64_t layer, const LayerActivations& a, const LayerGradients& g);

}  // namespace redline
