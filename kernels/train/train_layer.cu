// The layer's steps in order; each GEMM or kernel is one line here, and the
// math lives in the kernels' files.
#include "kernels/train/train_layer.cuh"

#include "kernels/train/rmsnorm.cuh"
#include "kernels/train/rotary.cuh"
#include "kernels/train/swiglu.cuh"

namespace redline {

namespace {

AttentionTensors attention_tensors(const LayerActivations& a) {
  AttentionTensors t;
  t.q = a.q, t.k = a.k, t.v = a.v, t.o = a.o, t.lse = a.lse;
  return t;
}

RotaryShape rotary_shape(const LayerContext& c, std::int64_t heads) {
  return {c.tokens(), c.seq, heads, c.config->head_dim(), c.config->rope_theta};
}

void attention_block_forward(const LayerContext& c, const LayerTensorIndex& w, const LayerActivations& a) {
  const ModelConfig& m = *c.config;
  const TrainParameters& p = *c.parameters;
  const std::int64_t t = c.tokens(), h = m.hidden, kv = m.kv_dim();
  rmsnorm_forward(a.x, p.weight(w.attn_norm), a.n1, a.rstd1, t, h, static_cast<float>(m.norm_eps), c.stream);
  c.gemms->linear(a.n1, p.weight(w.wq), a.q, t, h, h, nullptr, c.stream);
  c.gemms->linear(a.n1, p.weight(w.wk), a.k, t, h, kv, nullptr, c.stream);
  c.gemms->linear(a.n1, p.weight(w.wv), a.v, t, h, kv, nullptr, c.stream);
  rotary_forward(a.q, rotary_shape(c, m.heads), c.stream);
  rotary_forward(a.k, rotary_shape(c, m.kv_heads), c.stream);
  c.attention->forward(attention_tensors(a));
  c.gemms->linear(a.o, p.weight(w.wo), a.h1, t, h, h, a.x, c.stream);  // h1 = x + o Wo^T
}

// The norm weight gradients keep their partial sums in the GEMMs' workspace:
// on the same stream, no GEMM runs while they use it, and the memory model
// counts no buffer of their own.
void norm_weight_grad(const LayerContext& c, const __nv_bfloat16* d_n, const __nv_bfloat16* x, const float* rstd,
                      float* d_weight) {
  const LtWorkspace scratch = c.gemms->workspace();
  rmsnorm_weight_grad(d_n, x, rstd, d_weight, c.tokens(), c.config->hidden, scratch.data, scratch.bytes, c.stream);
}

void mlp_norm_and_act(const LayerContext& c, const LayerTensorIndex& w, const LayerActivations& a) {
  const TrainParameters& p = *c.parameters;
  rmsnorm_forward(a.h1, p.weight(w.mlp_norm), a.n2, a.rstd2, c.tokens(), c.config->hidden,
                  static_cast<float>(c.config->norm_eps), c.stream);
}

void mlp_block_backward(const LayerContext& c, const LayerTensorIndex& w, const LayerActivations& a,
                        const LayerGradients& g) {
  const TrainParameters& p = *c.parameters;
  const std::int64_t t = c.tokens(), h = c.config->hidden, f = c.config->ffn;
  c.gemms->data_grad(g.d_residual_a, p.weight(w.w_down), g.d_act, t, f, h, false, c.stream);
  c.gemms->weight_grad(g.d_residual_a, a.act, p.grad(w.w_down), t, f, h, c.stream);
  swiglu_backward(g.d_act, a.gate, a.up, g.d_gate, g.d_up, t * f, c.stream);
  c.gemms->data_grad(g.d_gate, p.weight(w.w_gate), g.d_n, t, h, f, false, c.stream);
  c.gemms->data_grad(g.d_up, p.weight(w.w_up), g.d_n, t, h, f, true, c.stream);
  c.gemms->weight_grad(g.d_gate, a.n2, p.grad(w.w_gate), t, h, f, c.stream);
  c.gemms->weight_grad(g.d_up, a.n2, p.grad(w.w_up), t, h, f, c.stream);
  norm_weight_grad(c, g.d_n, a.h1, a.rstd2, p.grad(w.mlp_norm));
  // d h1 = d out (around the MLP) + the MLP's path back through RMSNorm 2.
  rmsnorm_backward(g.d_n, a.h1, p.weight(w.mlp_norm), a.rstd2, g.d_residual_a, g.d_residual_b, t, h, c.stream);
}

void attention_block_backward(const LayerContext& c, const LayerTensorIndex& w, const LayerActivations& a,
                              const LayerGradients& g) {
  const ModelConfig& m = *c.config;
  const TrainParameters& p = *c.parameters;
  const std::int64_t t = c.tokens(), h = m.hidden, kv = m.kv_dim();
  c.gemms->data_grad(g.d_residual_b, p.weight(w.wo), g.d_o, t, h, h, false, c.stream);
  c.gemms->weight_grad(g.d_residual_b, a.o, p.grad(w.wo), t, h, h, c.stream);
  AttentionTensors at = attention_tensors(a);
  at.d_o = g.d_o, at.dq = g.d_q, at.dk = g.d_k, at.dv = g.d_v;
  c.attention->backward(at);
  rotary_backward(g.d_q, rotary_shape(c, m.heads), c.stream);
  rotary_backward(g.d_k, rotary_shape(c, m.kv_heads), c.stream);
  c.gemms->data_grad(g.d_q, p.weight(w.wq), g.d_n, t, h, h, false, c.stream);
  c.gemms->data_grad(g.d_k, p.weight(w.wk), g.d_n, t, h, kv, true, c.stream);
  c.gemms->data_grad(g.d_v, p.weight(w.wv), g.d_n, t, h, kv, true, c.stream);
  c.gemms->weight_grad(g.d_q, a.n1, p.grad(w.wq), t, h, h, c.stream);
  c.gemms->weight_grad(g.d_k, a.n1, p.grad(w.wk), t, h, kv, c.stream);
  c.gemms->weight_grad(g.d_v, a.n1, p.grad(w.wv), t, h, kv, c.stream);
  norm_weight_grad(c, g.d_n, a.x, a.rstd1, p.grad(w.attn_norm));
  rmsnorm_backward(g.d_n, a.x, p.weight(w.attn_norm), a.rstd1, g.d_residual_b, g.d_residual_a, t, h, c.stream);
}

}  // namespace

void layer_forward(const LayerContext& c, std::int64_t layer, const LayerActivations& a, __nv_bfloat16* out) {
  const LayerTensorIndex w = layer_tensor_index(layer);
  const TrainParameters& p = *c.parameters;
  const std::int64_t t = c.tokens(), h = c.config->hidden, f = c.config->ffn;
  attention_block_forward(c, w, a);
  mlp_norm_and_act(c, w, a);
  c.gemms->linear(a.n2, p.weight(w.w_gate), a.gate, t, h, f, nullptr, c.stream);
  c.gemms->linear(a.n2, p.weight(w.w_up), a.up, t, h, f, nullptr, c.stream);
  swiglu_forward(a.gate, a.up, a.act, t * f, c.stream);
  if (out != nullptr) c.gemms->linear(a.act, p.weight(w.w_down), out, t, f, h, a.h1, c.stream);  // out = h1 + ...
}

void layer_recompute(const LayerContext& c, std::int64_t layer, const LayerActivations& a, Recompute mode) {
  if (mode == Recompute::none) return;
  if (mode == Recompute::full) return layer_forward(c, layer, a, nullptr);
  // Selective: the norms rewrite their rstd with the values already saved.
  const LayerTensorIndex w = layer_tensor_index(layer);
  const TrainParameters& p = *c.parameters;
  rmsnorm_forward(a.x, p.weight(w.attn_norm), a.n1, a.rstd1, c.tokens(), c.config->hidden,
                  static_cast<float>(c.config->norm_eps), c.stream);
  mlp_norm_and_act(c, w, a);
  swiglu_forward(a.gate, a.up, a.act, c.tokens() * c.config->ffn, c.stream);
}

void layer_backward(const LayerContext& c, std::int64_t layer, const LayerActivations& a, const LayerGradients& g) {
  const LayerTensorIndex w = layer_tensor_index(layer);
  mlp_block_backward(c, w, a, g);
  attention_block_backward(c, w, a, g);
}

}  // namespace redline
