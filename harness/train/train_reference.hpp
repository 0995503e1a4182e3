// The CPU reference of one training step of the decoder stack in
// model_config.hpp, in double precision: the loss, the exact gradient of every
// weight by a hand-written backward pass, and an AdamW step. The training step's
// CUDA implementation is checked against it; finite differences check it (in
// tests only). Pure C++.
//
// Conventions (the CUDA implementation follows them):
// - Activations row-major, one token per row: [b*s, width], token
//   t = batch_index * s + position; tokens and targets likewise [b*s].
// - Weights [out_features, in_features] row-major (PyTorch's nn.Linear), a
//   projection is y = x W^T: wq [h, h], wk and wv [kv_dim, h], wo [h, h],
//   w_gate and w_up [ffn, h], w_down [h, ffn]; norm weights [h];
//   embedding [vocab, h] (row = token id); logits [vocab, h] (untied).
// - Layer: x -> RMSNorm(attn_norm) -> Q, K, V projections -> rotary on Q and K
//   (positions 0..s-1 within each sequence) -> causal attention -> wo -> + x
//   = h1; h1 -> RMSNorm(mlp_norm) -> silu(h1n w_gate^T) * (h1n w_up^T)
//   -> w_down -> + h1. Then the final RMSNorm, logits = x logits^T, and the
//   mean over all b*s tokens of the cross-entropy against targets.
// - RMSNorm: y = x / sqrt(mean(x^2) + norm_eps) * w, per token row.
// - Rotary: Hugging Face Llama's rotate_half; for head dim d and i < d/2 the
//   pair (i, i + d/2) turns by position * rope_theta^(-2i/d).
// - Attention: causal, scale 1/sqrt(d); query head h (Q columns
//   [h d, (h+1) d)) reads KV head h / (heads / kv_heads).
// The layers themselves are in train_reference_layers.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/train/model_config.hpp"

namespace redline {

struct LayerWeights {
  std::vector<double> attn_norm;  // [h]
  std::vector<double> wq;         // [h, h]
  std::vector<double> wk;         // [kv_dim, h]
  std::vector<double> wv;         // [kv_dim, h]
  std::vector<double> wo;         // [h, h]
  std::vector<double> mlp_norm;   // [h]
  std::vector<double> w_gate;     // [ffn, h]
  std::vector<double> w_up;       // [ffn, h]
  std::vector<double> w_down;     // [h, ffn]
};

// One named weight tensor: its values and shape ({h} for a norm weight,
// {out, in} for a matrix).
struct WeightTensor {
  std::string name;  // "embedding", "layers.<i>.<field>" (e.g. "layers.0.wq"), "final_norm", "logits"
  std::vector<std::int64_t> shape;
  std::vector<double>* values = nullptr;
  bool is_norm() const { return shape.size() == 1; }
};
struct ConstWeightTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  const std::vector<double>* values = nullptr;
  bool is_norm() const { return shape.size() == 1; }
};

// Every weight of the stack (a model's gradients and optimizer moments use
// the same struct).
struct ModelWeights {
  std::vector<double> embedding;  // [vocab, h]
  std::vector<LayerWeights> layers;
  std::vector<double> final_norm;  // [h]
  std::vector<double> logits;      // [vocab, h]

  // Every tensor, in a fixed order: embedding; per layer attn_norm, wq, wk,
  // wv, wo, mlp_norm, w_gate, w_up, w_down; final_norm; logits. Shapes come
  // from the sizes, with hidden = final_norm.size(). The pointers point into
  // this object: keep it alive while they are used.
  std::vector<WeightTensor> tensors();
  std::vector<ConstWeightTensor> tensors() const;
};

// Every function below checks the config with validate_shape
// (model_config.hpp): any even head dim is fine (tiny test models have d = 4).

// Every tensor shaped for `config`, all zeros.
ModelWeights zero_weights(const ModelConfig& config);

// Norm weights 1; every other element of tensor number k (in tensors()
// order), element i, is (2u - 1) / sqrt(in_features), where
// u = (splitmix64(splitmix64(seed + k) + i) >> 11) * 2^-53 is uniform in
// [0, 1) and in_features = h for the embedding.
ModelWeights init_weights(const ModelConfig& config, std::uint64_t seed);

struct StepResult {
  double loss = 0;
  ModelWeights grads;  // d loss / d weight, shaped as the weights
};

// The loss of tokens -> targets (both [batch * seq], ids in [0, vocab)) and
// the gradient of every weight, by the backward pass. Throws
// std::invalid_argument on a bad config, shape or token id.
StepResult reference_step(const ModelConfig& config, const ModelWeights& weights,
                          const std::vector<std::int32_t>& tokens, const std::vector<std::int32_t>& targets,
                          std::int64_t batch, std::int64_t seq);

// The forward pass alone: the logits [batch * seq, vocab], and the loss.
std::vector<double> reference_logits(const ModelConfig& config, const ModelWeights& weights,
                                     const std::vector<std::int32_t>& tokens, std::int64_t batch, std::int64_t seq);
double reference_loss(const ModelConfig& config, const ModelWeights& weights, const std::vector<std::int32_t>& tokens,
                      const std::vector<std::int32_t>& targets, std::int64_t batch, std::int64_t seq);

// AdamW (Loshchilov and Hutter; PyTorch's torch.optim.AdamW). For step
// t = state.step after its increment, each element:
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   m_hat = m / (1 - beta1^t);  v_hat = v / (1 - beta2^t)
//   w = w - lr (m_hat / (sqrt(v_hat) + eps) + weight_decay w)
// Weight decay is decoupled and applies to every 2-D tensor (embedding,
// projections, logits), not to the norm weights.
struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};
struct AdamWState {
  ModelWeights m, v;      // first and second moments, zeros at the start
  std::int64_t step = 0;  // steps taken
};
AdamWState adamw_init(const ModelConfig& config);
// One tensor's update at step t (1-based); `decay` says whether weight decay applies.
void adamw_tensor_step(const AdamWConfig& adamw, std::int64_t t, bool decay, std::vector<double>& weights,
                       const std::vector<double>& grads, std::vector<double>& m, std::vector<double>& v);
// Increments state.step and updates every tensor of `weights` (is_norm(): no decay).
void adamw_reference_step(const AdamWConfig& adamw, ModelWeights& weights, const ModelWeights& grads,
                          AdamWState& state);

}  // namespace redline
