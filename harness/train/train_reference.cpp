// The reference's stack: embedding, the layers, the final norm, the logits
// and the loss, forward with what the backward keeps, then backward.
#include "harness/train/train_reference.hpp"

#include <stdexcept>
#include <string>

#include "harness/train/train_reference_layers.hpp"

namespace redline {
namespace {

using namespace train_ref;
using Tokens = std::vector<std::int32_t>;

// The sizes one pass works on.
struct Dims {
  std::int64_t n = 0, h = 0, kv = 0, ffn = 0, vocab = 0;
  double eps = 0;
  AttentionDims attention;
  RopeDims q_rope, k_rope;
};

Dims dims_of(const ModelConfig& c, std::int64_t batch, std::int64_t seq) {
  validate_reference_config(c);
  if (batch < 1 || seq < 1)
    throw std::invalid_argument("batch = " + std::to_string(batch) + ", seq = " + std::to_string(seq) +
                                ": both must be at least 1");
  const std::int64_t d = c.head_dim();
  return {batch * seq,
          c.hidden,
          c.kv_dim(),
          c.ffn,
          c.vocab,
          c.norm_eps,
          {batch, seq, c.heads, c.kv_heads, d},
          {seq, c.heads, d, c.rope_theta},
          {seq, c.kv_heads, d, c.rope_theta}};
}

void check_tokens(const Tokens& tokens, const Dims& d, const char* name) {
  if (static_cast<std::int64_t>(tokens.size()) != d.n)
    throw std::invalid_argument(std::string(name) + " holds " + std::to_string(tokens.size()) +
                                " ids, not batch * seq = " + std::to_string(d.n));
  for (std::int32_t t : tokens)
    if (t < 0 || t >= d.vocab)
      throw std::invalid_argument(std::string(name) + " id " + std::to_string(t) + " outside vocab " +
                                  std::to_string(d.vocab));
}

void check_weights(const ModelConfig& c, const ModelWeights& w) {
  const ModelWeights zeros = zero_weights(c);  // tensors() points into it
  const auto expected = zeros.tensors();
  const auto actual = w.tensors();
  if (actual.size() != expected.size())
    throw std::invalid_argument("weights hold " + std::to_string(w.layers.size()) + " layers, not " +
                                std::to_string(c.layers));
  for (std::size_t i = 0; i < actual.size(); ++i)
    if (actual[i].values->size() != expected[i].values->size())
      throw std::invalid_argument("weight " + expected[i].name + " holds " + std::to_string(actual[i].values->size()) +
                                  " elements, not " + std::to_string(expected[i].values->size()));
}

void add_into(std::vector<double>& into, const std::vector<double>& x) {
  for (std::size_t i = 0; i < into.size(); ++i) into[i] += x[i];
}

// What one layer's backward reads.
struct LayerCache {
  std::vector<double> x;  // the layer's input
  RmsNormForward norm1;
  std::vector<double> q, k, v;  // q and k after the rotary embedding
  std::vector<double> attn;     // attention's output, before wo
  std::vector<double> h1;       // x + attn wo^T
  RmsNormForward norm2;
  std::vector<double> gate, up, act;
};

std::vector<double> layer_forward(const Dims& d, const LayerWeights& w, std::vector<double> x, LayerCache& c) {
  c.x = std::move(x);
  c.norm1 = rmsnorm_forward(c.x, w.attn_norm, d.n, d.h, d.eps);
  c.q = rope_forward(linear_forward(c.norm1.y, w.wq, d.n, d.h, d.h), d.n, d.q_rope);
  c.k = rope_forward(linear_forward(c.norm1.y, w.wk, d.n, d.h, d.kv), d.n, d.k_rope);
  c.v = linear_forward(c.norm1.y, w.wv, d.n, d.h, d.kv);
  c.attn = attention_forward(d.attention, c.q, c.k, c.v);
  c.h1 = linear_forward(c.attn, w.wo, d.n, d.h, d.h);
  add_into(c.h1, c.x);
  c.norm2 = rmsnorm_forward(c.h1, w.mlp_norm, d.n, d.h, d.eps);
  c.gate = linear_forward(c.norm2.y, w.w_gate, d.n, d.h, d.ffn);
  c.up = linear_forward(c.norm2.y, w.w_up, d.n, d.h, d.ffn);
  c.act = swiglu_forward(c.gate, c.up);
  std::vector<double> out = linear_forward(c.act, w.w_down, d.n, d.ffn, d.h);
  add_into(out, c.h1);
  return out;
}

// d_out: the gradient of the layer's output; returns its input's. Adds the
// weights' gradients into g.
std::vector<double> layer_backward(const Dims& d, const LayerWeights& w, const LayerCache& c,
                                   const std::vector<double>& d_out, LayerWeights& g) {
  const std::vector<double> d_act = linear_backward(c.act, w.w_down, d_out, d.n, d.ffn, d.h, g.w_down);
  const SwigluGrads sg = swiglu_backward(c.gate, c.up, d_act);
  std::vector<double> d_norm2 = linear_backward(c.norm2.y, w.w_gate, sg.d_gate, d.n, d.h, d.ffn, g.w_gate);
  add_into(d_norm2, linear_backward(c.norm2.y, w.w_up, sg.d_up, d.n, d.h, d.ffn, g.w_up));
  std::vector<double> d_h1 = rmsnorm_backward(c.h1, w.mlp_norm, c.norm2.inv_rms, d_norm2, d.n, d.h, g.mlp_norm);
  add_into(d_h1, d_out);  // the residual

  const std::vector<double> d_attn = linear_backward(c.attn, w.wo, d_h1, d.n, d.h, d.h, g.wo);
  const AttentionGrads ag = attention_backward(d.attention, c.q, c.k, c.v, d_attn);
  const std::vector<double> dq = rope_backward(ag.dq, d.n, d.q_rope), dk = rope_backward(ag.dk, d.n, d.k_rope);
  std::vector<double> d_norm1 = linear_backward(c.norm1.y, w.wq, dq, d.n, d.h, d.h, g.wq);
  add_into(d_norm1, linear_backward(c.norm1.y, w.wk, dk, d.n, d.h, d.kv, g.wk));
  add_into(d_norm1, linear_backward(c.norm1.y, w.wv, ag.dv, d.n, d.h, d.kv, g.wv));
  std::vector<double> dx = rmsnorm_backward(c.x, w.attn_norm, c.norm1.inv_rms, d_norm1, d.n, d.h, g.attn_norm);
  add_into(dx, d_h1);  // the residual
  return dx;
}

// The whole forward pass and what the backward reads.
struct StackCache {
  std::vector<LayerCache> layers;
  std::vector<double> final_in;
  RmsNormForward final_norm;
  std::vector<double> logits;
};

StackCache stack_forward(const Dims& d, const ModelWeights& w, const Tokens& tokens) {
  std::vector<double> x(static_cast<std::size_t>(d.n * d.h));
  for (std::int64_t t = 0; t < d.n; ++t)
    for (std::int64_t i = 0; i < d.h; ++i) x[t * d.h + i] = w.embedding[tokens[t] * d.h + i];
  StackCache c;
  c.layers.resize(w.layers.size());
  for (std::size_t l = 0; l < w.layers.size(); ++l) x = layer_forward(d, w.layers[l], std::move(x), c.layers[l]);
  c.final_in = std::move(x);
  c.final_norm = rmsnorm_forward(c.final_in, w.final_norm, d.n, d.h, d.eps);
  c.logits = linear_forward(c.final_norm.y, w.logits, d.n, d.h, d.vocab);
  return c;
}

// Fills g from the loss's gradient with respect to the logits.
void stack_backward(const Dims& d, const ModelWeights& w, const Tokens& tokens, const StackCache& c,
                    const std::vector<double>& d_logits, ModelWeights& g) {
  const std::vector<double> d_norm = linear_backward(c.final_norm.y, w.logits, d_logits, d.n, d.h, d.vocab, g.logits);
  std::vector<double> dx =
      rmsnorm_backward(c.final_in, w.final_norm, c.final_norm.inv_rms, d_norm, d.n, d.h, g.final_norm);
  for (std::size_t l = w.layers.size(); l-- > 0;) dx = layer_backward(d, w.layers[l], c.layers[l], dx, g.layers[l]);
  // The embedding is a gather: a token's row sums the gradients of its uses.
  for (std::int64_t t = 0; t < d.n; ++t)
    for (std::int64_t i = 0; i < d.h; ++i) g.embedding[tokens[t] * d.h + i] += dx[t * d.h + i];
}

Dims checked_dims(const ModelConfig& config, const ModelWeights& weights, const Tokens& tokens, std::int64_t batch,
                  std::int64_t seq) {
  const Dims d = dims_of(config, batch, seq);
  check_weights(config, weights);
  check_tokens(tokens, d, "tokens");
  return d;
}

}  // namespace

StepResult reference_step(const ModelConfig& config, const ModelWeights& weights, const Tokens& tokens,
                          const Tokens& targets, std::int64_t batch, std::int64_t seq) {
  const Dims d = checked_dims(config, weights, tokens, batch, seq);
  check_tokens(targets, d, "targets");
  const StackCache c = stack_forward(d, weights, tokens);
  StepResult r{cross_entropy_forward(c.logits, targets, d.n, d.vocab), zero_weights(config)};
  stack_backward(d, weights, tokens, c, cross_entropy_backward(c.logits, targets, d.n, d.vocab), r.grads);
  return r;
}

std::vector<double> reference_logits(const ModelConfig& config, const ModelWeights& weights, const Tokens& tokens,
                                     std::int64_t batch, std::int64_t seq) {
  const Dims d = checked_dims(config, weights, tokens, batch, seq);
  return stack_forward(d, weights, tokens).logits;
}

double reference_loss(const ModelConfig& config, const ModelWeights& weights, const Tokens& tokens,
                      const Tokens& targets, std::int64_t batch, std::int64_t seq) {
  const Dims d = checked_dims(config, weights, tokens, batch, seq);
  check_tokens(targets, d, "targets");
  return cross_entropy_forward(stack_forward(d, weights, tokens).logits, targets, d.n, d.vocab);
}

}  // namespace redline
