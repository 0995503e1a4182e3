// A Llama-style decoder stack's shape: the model the training step builds,
// trains and measures, its presets, and its parameter counts. Pure C++.
//
// The layer (every preset runs this layer, whatever its original family):
//   x -> RMSNorm -> QKV projection (a_q query, a_kv KV heads of d = h / a_q)
//     -> rotary embedding on Q and K -> attention (causal) -> output
//     projection -> + x = h1
//   h1 -> RMSNorm -> gate and up projections (ffn) -> SiLU(gate) * up
//     -> down projection -> + h1 = the layer's output
// around it: token embedding (vocab x h), L layers, a final RMSNorm, the
// logits GEMM (h x vocab, untied) and cross-entropy. No biases.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redline {

// Which attention path the stack runs: cuDNN's fused kernel, or the
// unfused GEMMs and softmax (with its s^2 scores in memory).
enum class AttentionChoice { cudnn, unfused };
const char* attention_choice_name(AttentionChoice choice);  // "cudnn", "unfused"
std::optional<AttentionChoice> parse_attention_choice(const std::string& text);

struct ModelConfig {
  std::string name;  // the preset's, or "custom"
  std::int64_t hidden = 0;
  std::int64_t heads = 0;     // a_q
  std::int64_t kv_heads = 0;  // a_kv, divides heads
  std::int64_t ffn = 0;       // SwiGLU width (gate and up are hidden x ffn each)
  std::int64_t layers = 0;    // layers built and run (--layers N: a slice of the preset)
  std::int64_t vocab = 0;
  double rope_theta = 10000;  // the rotary base (500000 for Llama 3)
  double norm_eps = 1e-5;

  std::int64_t head_dim() const { return hidden / heads; }
  std::int64_t kv_dim() const { return kv_heads * head_dim(); }  // K (and V) width
};

// llama3-8b, llama3-70b, llama2-7b, gpt2-xl (GPT-2 XL's hidden, heads,
// FFN, layers and vocab in this Llama-style layer: SwiGLU has three FFN
// matrices and there are no learned positions, so its parameter count is not
// GPT-2's 1.56e9). nullopt for other names.
std::optional<ModelConfig> model_preset(const std::string& name);
const std::vector<std::string>& model_preset_names();

// Throws std::invalid_argument naming the field: a size below 1, heads not
// dividing hidden, kv_heads not dividing heads, an odd head dim (rotary turns
// pairs), a rope base or norm epsilon not above 0. What the CPU reference
// needs (its tiny test shapes have head dims of 4).
void validate_shape(const ModelConfig& config);
// validate_shape, and a head dim that is a multiple of 8 (the fused
// attention kernels): what the GPU stack builds.
void validate(const ModelConfig& config);

struct ParameterCounts {
  std::int64_t embedding = 0;        // vocab x h
  std::int64_t layer_attention = 0;  // one layer's QKV (h x (h + 2 kv_dim)) and output (h x h) projections
  std::int64_t layer_mlp = 0;        // one layer's gate, up and down projections: 3 h ffn
  std::int64_t layer_norms = 0;      // one layer's two RMSNorm weights: 2 h
  std::int64_t layer_count = 0;
  std::int64_t final_norm = 0;       // h
  std::int64_t logits = 0;           // h x vocab (untied)

  std::int64_t per_layer() const { return layer_attention + layer_mlp + layer_norms; }
  std::int64_t total() const { return embedding + per_layer() * layer_count + final_norm + logits; }
  // Parameters a GEMM multiplies per token (everything but the embedding
  // gather and the norms): the N of the 6N FLOP rule.
  std::int64_t matmul() const { return (layer_attention + layer_mlp) * layer_count + logits; }
};
ParameterCounts parameter_counts(const ModelConfig& config);

}  // namespace redline
