// The reference's weights: the named tensors, zeros and the seeded init.
#include <cmath>
#include <stdexcept>
#include <string>

#include "harness/core/splitmix64.hpp"
#include "harness/train/train_reference.hpp"

namespace redline {
namespace {

// Every tensor of `w` (ModelWeights or const ModelWeights) as Tensor, in the
// documented order. Shapes come from the sizes and the hidden width.
template <typename Tensor, typename Weights>
std::vector<Tensor> list_tensors(Weights& w) {
  const std::int64_t h = static_cast<std::int64_t>(w.final_norm.size());
  auto rows = [h](const std::vector<double>& t) { return h == 0 ? 0 : static_cast<std::int64_t>(t.size()) / h; };
  std::vector<Tensor> out;
  out.push_back({"embedding", {rows(w.embedding), h}, &w.embedding});
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    auto& l = w.layers[i];
    const std::string p = "layers." + std::to_string(i) + ".";
    const std::int64_t ffn = rows(l.w_gate);
    out.push_back({p + "attn_norm", {h}, &l.attn_norm});
    out.push_back({p + "wq", {h, h}, &l.wq});
    out.push_back({p + "wk", {rows(l.wk), h}, &l.wk});
    out.push_back({p + "wv", {rows(l.wv), h}, &l.wv});
    out.push_back({p + "wo", {h, h}, &l.wo});
    out.push_back({p + "mlp_norm", {h}, &l.mlp_norm});
    out.push_back({p + "w_gate", {ffn, h}, &l.w_gate});
    out.push_back({p + "w_up", {ffn, h}, &l.w_up});
    out.push_back({p + "w_down", {h, ffn}, &l.w_down});
  }
  out.push_back({"final_norm", {h}, &w.final_norm});
  out.push_back({"logits", {rows(w.logits), h}, &w.logits});
  return out;
}

void at_least_one(std::int64_t value, const char* name) {
  if (value < 1) throw std::invalid_argument(std::string(name) + " = " + std::to_string(value) + " is below 1");
}

std::vector<double> zeros(std::int64_t n) { return std::vector<double>(static_cast<std::size_t>(n), 0.0); }

}  // namespace

std::vector<WeightTensor> ModelWeights::tensors() { return list_tensors<WeightTensor>(*this); }
std::vector<ConstWeightTensor> ModelWeights::tensors() const { return list_tensors<ConstWeightTensor>(*this); }

void validate_reference_config(const ModelConfig& c) {
  at_least_one(c.hidden, "hidden");
  at_least_one(c.heads, "heads");
  at_least_one(c.kv_heads, "kv_heads");
  at_least_one(c.ffn, "ffn");
  at_least_one(c.layers, "layers");
  at_least_one(c.vocab, "vocab");
  if (c.hidden % c.heads != 0)
    throw std::invalid_argument("heads = " + std::to_string(c.heads) +
                                " does not divide hidden = " + std::to_string(c.hidden));
  if (c.heads % c.kv_heads != 0)
    throw std::invalid_argument("kv_heads = " + std::to_string(c.kv_heads) +
                                " does not divide heads = " + std::to_string(c.heads));
  if (c.head_dim() % 2 != 0)
    throw std::invalid_argument("head dim = " + std::to_string(c.head_dim()) + " is odd (rotary turns pairs)");
  if (!(c.rope_theta > 0) || !(c.norm_eps > 0)) throw std::invalid_argument("rope_theta and norm_eps must be positive");
}

ModelWeights zero_weights(const ModelConfig& c) {
  validate_reference_config(c);
  const std::int64_t h = c.hidden;
  ModelWeights w;
  w.embedding = zeros(c.vocab * h);
  LayerWeights l;
  l.attn_norm = zeros(h), l.mlp_norm = zeros(h);
  l.wq = zeros(h * h), l.wo = zeros(h * h);
  l.wk = zeros(c.kv_dim() * h), l.wv = zeros(c.kv_dim() * h);
  l.w_gate = zeros(c.ffn * h), l.w_up = zeros(c.ffn * h), l.w_down = zeros(h * c.ffn);
  w.layers.assign(static_cast<std::size_t>(c.layers), l);
  w.final_norm = zeros(h);
  w.logits = zeros(c.vocab * h);
  return w;
}

ModelWeights init_weights(const ModelConfig& c, std::uint64_t seed) {
  ModelWeights w = zero_weights(c);
  std::uint64_t k = 0;
  for (WeightTensor& t : w.tensors()) {
    const std::uint64_t stream = splitmix64(seed + k++);
    if (t.is_norm()) {
      t.values->assign(t.values->size(), 1.0);
      continue;
    }
    const double scale = 1 / std::sqrt(static_cast<double>(t.shape[1]));
    for (std::size_t i = 0; i < t.values->size(); ++i) {
      const double u = static_cast<double>(splitmix64(stream + i) >> 11) * 0x1p-53;
      (*t.values)[i] = (2 * u - 1) * scale;
    }
  }
  return w;
}

}  // namespace redline
