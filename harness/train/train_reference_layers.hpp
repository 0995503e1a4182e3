// The CPU reference's layers, forward and backward, in double precision:
// linear, RMSNorm, rotary embedding, causal attention, SwiGLU and mean
// cross-entropy. The stack (train_reference.hpp) chains them; the tests check
// each by hand. Pure C++.
//
// Layout: activations are row-major with one token per row, [n, width],
// n = batch * seq and token t = batch_index * seq + position. A weight is
// [out, in] row-major (PyTorch's nn.Linear) and a linear layer is y = x W^T.
// A backward returns the input's gradient and adds (+=) into the weight's, so
// a weight used twice (or over several calls) sums its gradient.
#pragma once

#include <cstdint>
#include <vector>

namespace redline::train_ref {

// y [n, out] = x [n, in] W^T, W [out, in].
std::vector<double> linear_forward(const std::vector<double>& x, const std::vector<double>& w, std::int64_t n,
                                   std::int64_t in, std::int64_t out);
// Returns dx = dy W [n, in]; adds dW += dy^T x [out, in].
std::vector<double> linear_backward(const std::vector<double>& x, const std::vector<double>& w,
                                    const std::vector<double>& dy, std::int64_t n, std::int64_t in, std::int64_t out,
                                    std::vector<double>& dw);

// RMSNorm per row: y = x / sqrt(mean(x^2) + eps) * w, w [width].
struct RmsNormForward {
  std::vector<double> y;        // [n, width]
  std::vector<double> inv_rms;  // [n]: 1 / sqrt(mean(x^2) + eps), kept for the backward
};
RmsNormForward rmsnorm_forward(const std::vector<double>& x, const std::vector<double>& w, std::int64_t n,
                               std::int64_t width, double eps);
// Returns dx; adds dw.
std::vector<double> rmsnorm_backward(const std::vector<double>& x, const std::vector<double>& w,
                                     const std::vector<double>& inv_rms, const std::vector<double>& dy, std::int64_t n,
                                     std::int64_t width, std::vector<double>& dw);

// Rotary embedding, Hugging Face Llama's rotate_half convention, per head of
// x [n, heads * head_dim] (head h in columns [h d, (h + 1) d)). Row t sits at
// position t % seq. For i < d/2 the pair (i, i + d/2) turns by
// angle = position * theta^(-2i/d):
//   x'[i] = x[i] cos - x[i + d/2] sin,  x'[i + d/2] = x[i + d/2] cos + x[i] sin.
struct RopeDims {
  std::int64_t seq = 0;
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;  // even
  double theta = 10000;
};
std::vector<double> rope_forward(const std::vector<double>& x, std::int64_t n, const RopeDims& dims);
// The rotation is orthogonal: its backward turns dy by -angle.
std::vector<double> rope_backward(const std::vector<double>& dy, std::int64_t n, const RopeDims& dims);

// Causal softmax attention on token rows: q [b*s, heads*d], k and v
// [b*s, kv_heads*d], out [b*s, heads*d]. Query head h reads KV head
// h / (heads / kv_heads); scores are scaled by 1 / sqrt(d); position i sees
// keys 0..i of its own sequence.
struct AttentionDims {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
};
std::vector<double> attention_forward(const AttentionDims& dims, const std::vector<double>& q,
                                      const std::vector<double>& k, const std::vector<double>& v);
struct AttentionGrads {
  std::vector<double> dq, dk, dv;  // shaped as q, k, v
};
AttentionGrads attention_backward(const AttentionDims& dims, const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, const std::vector<double>& d_out);

// SwiGLU: act = silu(gate) * up elementwise, silu(z) = z * sigmoid(z).
std::vector<double> swiglu_forward(const std::vector<double>& gate, const std::vector<double>& up);
struct SwigluGrads {
  std::vector<double> d_gate, d_up;
};
SwigluGrads swiglu_backward(const std::vector<double>& gate, const std::vector<double>& up,
                            const std::vector<double>& d_act);

// Mean over the n rows of -log softmax(logits[t])[targets[t]]; logits [n, vocab].
double cross_entropy_forward(const std::vector<double>& logits, const std::vector<std::int32_t>& targets,
                             std::int64_t n, std::int64_t vocab);
// d loss / d logits = (softmax(logits[t]) - onehot(targets[t])) / n.
std::vector<double> cross_entropy_backward(const std::vector<double>& logits, const std::vector<std::int32_t>& targets,
                                           std::int64_t n, std::int64_t vocab);

}  // namespace redline::train_ref
