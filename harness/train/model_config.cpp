#include "harness/train/model_config.hpp"

#include <stdexcept>

#include "harness/core/checks.hpp"

namespace redline {
namespace {

ModelConfig preset(std::string name, std::int64_t hidden, std::int64_t heads, std::int64_t kv_heads, std::int64_t ffn,
                   std::int64_t layers, std::int64_t vocab, double theta) {
  ModelConfig c;
  c.name = std::move(name), c.hidden = hidden, c.heads = heads, c.kv_heads = kv_heads, c.ffn = ffn;
  c.layers = layers, c.vocab = vocab, c.rope_theta = theta;
  return c;
}

// Sources: the models' published configs (Hugging Face config.json of
// meta-llama/Meta-Llama-3-8B, -70B, Llama-2-7b-hf, and openai-community/gpt2-xl).
const std::vector<ModelConfig>& presets() {
  static const std::vector<ModelConfig> all = {
      preset("llama3-8b", 4096, 32, 8, 14336, 32, 128256, 500000),
      preset("llama3-70b", 8192, 64, 8, 28672, 80, 128256, 500000),
      preset("llama2-7b", 4096, 32, 32, 11008, 32, 32000, 10000),
      preset("gpt2-xl", 1600, 25, 25, 6400, 48, 50257, 10000),
  };
  return all;
}

}  // namespace

const char* attention_choice_name(AttentionChoice choice) {
  return choice == AttentionChoice::cudnn ? "cudnn" : "unfused";
}

std::optional<AttentionChoice> parse_attention_choice(const std::string& text) {
  for (AttentionChoice choice : {AttentionChoice::cudnn, AttentionChoice::unfused})
    if (text == attention_choice_name(choice)) return choice;
  return std::nullopt;
}

std::optional<ModelConfig> model_preset(const std::string& name) {
  for (const auto& c : presets())
    if (c.name == name) return c;
  return std::nullopt;
}

const std::vector<std::string>& model_preset_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& c : presets()) out.push_back(c.name);
    return out;
  }();
  return names;
}

void validate_shape(const ModelConfig& c) {
  require_at_least_one(c.hidden, "hidden");
  require_at_least_one(c.heads, "heads");
  require_at_least_one(c.kv_heads, "kv_heads");
  require_at_least_one(c.ffn, "ffn");
  require_at_least_one(c.layers, "layers");
  require_at_least_one(c.vocab, "vocab");
  require_divides(c.heads, "heads", c.hidden, "hidden");
  require_divides(c.kv_heads, "kv_heads", c.heads, "heads");
  if (c.head_dim() % 2 != 0)
    throw std::invalid_argument("head dim = " + std::to_string(c.head_dim()) + " is odd (rotary turns pairs)");
  if (!(c.rope_theta > 0) || !(c.norm_eps > 0)) throw std::invalid_argument("rope_theta and norm_eps must be positive");
}

void validate(const ModelConfig& c) {
  validate_shape(c);
  // Fused attention needs 16-byte rows of bf16.
  if (c.head_dim() % 8 != 0)
    throw std::invalid_argument("head dim = " + std::to_string(c.head_dim()) + " is not a multiple of 8");
}

ParameterCounts parameter_counts(const ModelConfig& c) {
  validate(c);
  ParameterCounts p;
  const std::int64_t h = c.hidden;
  p.embedding = c.vocab * h;
  p.layer_attention = h * (h + 2 * c.kv_dim()) + h * h;
  p.layer_mlp = 3 * h * c.ffn;
  p.layer_norms = 2 * h;
  p.layer_count = c.layers;
  p.final_norm = h;
  p.logits = h * c.vocab;
  return p;
}

}  // namespace redline
