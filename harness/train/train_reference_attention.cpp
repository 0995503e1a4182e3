// Causal attention on token rows, the train reference's own (the attention
// room is a sibling and its BHSD layout differs): q, k, v as the projections
// write them, [b*s, heads*d] and [b*s, kv_heads*d].
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "harness/train/train_reference_layers.hpp"

namespace redline::train_ref {
namespace {

void check_inputs(const AttentionDims& a, const std::vector<double>& q, const std::vector<double>& k,
                  const std::vector<double>& v) {
  if (a.batch < 1 || a.seq < 1 || a.heads < 1 || a.kv_heads < 1 || a.head_dim < 1 || a.heads % a.kv_heads != 0)
    throw std::invalid_argument("attention: heads = " + std::to_string(a.heads) + ", kv_heads = " +
                                std::to_string(a.kv_heads) + " (sizes at least 1, kv_heads dividing heads)");
  const std::size_t tokens = static_cast<std::size_t>(a.batch * a.seq);
  if (q.size() != tokens * static_cast<std::size_t>(a.heads * a.head_dim) ||
      k.size() != tokens * static_cast<std::size_t>(a.kv_heads * a.head_dim) || v.size() != k.size())
    throw std::invalid_argument("attention: q, k or v is not [batch * seq, heads * head_dim]");
}

// Where query row (b, i) of head h and its KV head's rows start, and the
// strides between consecutive tokens.
struct HeadView {
  const double* q = nullptr;  // row i of the head: q + i * q_stride
  const double* k = nullptr;  // key j: k + j * kv_stride
  const double* v = nullptr;
  std::int64_t q_stride = 0, kv_stride = 0;
  std::size_t q_offset = 0, kv_offset = 0;  // of token (b, 0), head columns included
};

HeadView head_view(const AttentionDims& a, const std::vector<double>& q, const std::vector<double>& k,
                   const std::vector<double>& v, std::int64_t b, std::int64_t h) {
  HeadView view;
  view.q_stride = a.heads * a.head_dim;
  view.kv_stride = a.kv_heads * a.head_dim;
  const std::int64_t kv_head = h / (a.heads / a.kv_heads);
  view.q_offset = static_cast<std::size_t>(b * a.seq * view.q_stride + h * a.head_dim);
  view.kv_offset = static_cast<std::size_t>(b * a.seq * view.kv_stride + kv_head * a.head_dim);
  view.q = q.data() + view.q_offset, view.k = k.data() + view.kv_offset, view.v = v.data() + view.kv_offset;
  return view;
}

double dot(const double* x, const double* y, std::int64_t n) {
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

// Query row i's probabilities over keys 0..i (into p[0..i]).
void softmax_row(const HeadView& view, std::int64_t i, std::int64_t d, double scale, std::vector<double>& p) {
  double max_score = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j <= i; ++j) {
    p[j] = scale * dot(view.q + i * view.q_stride, view.k + j * view.kv_stride, d);
    max_score = std::max(max_score, p[j]);
  }
  double sum = 0;
  for (std::int64_t j = 0; j <= i; ++j) sum += p[j] = std::exp(p[j] - max_score);
  for (std::int64_t j = 0; j <= i; ++j) p[j] /= sum;
}

}  // namespace

std::vector<double> attention_forward(const AttentionDims& a, const std::vector<double>& q,
                                      const std::vector<double>& k, const std::vector<double>& v) {
  check_inputs(a, q, k, v);
  const std::int64_t d = a.head_dim;
  const double scale = 1 / std::sqrt(static_cast<double>(d));
  std::vector<double> out(q.size(), 0.0), p(static_cast<std::size_t>(a.seq));
  for (std::int64_t b = 0; b < a.batch; ++b)
    for (std::int64_t h = 0; h < a.heads; ++h) {
      const HeadView view = head_view(a, q, k, v, b, h);
      for (std::int64_t i = 0; i < a.seq; ++i) {
        softmax_row(view, i, d, scale, p);
        double* o = &out[view.q_offset + static_cast<std::size_t>(i * view.q_stride)];
        for (std::int64_t j = 0; j <= i; ++j)
          for (std::int64_t c = 0; c < d; ++c) o[c] += p[j] * view.v[j * view.kv_stride + c];
      }
    }
  return out;
}

AttentionGrads attention_backward(const AttentionDims& a, const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, const std::vector<double>& d_out) {
  check_inputs(a, q, k, v);
  if (d_out.size() != q.size()) throw std::invalid_argument("attention: d_out is not shaped as q");
  const std::int64_t d = a.head_dim;
  const double scale = 1 / std::sqrt(static_cast<double>(d));
  AttentionGrads g{std::vector<double>(q.size(), 0.0), std::vector<double>(k.size(), 0.0),
                   std::vector<double>(v.size(), 0.0)};
  std::vector<double> p(static_cast<std::size_t>(a.seq)), dp(p.size());
  for (std::int64_t b = 0; b < a.batch; ++b)
    for (std::int64_t h = 0; h < a.heads; ++h) {
      const HeadView view = head_view(a, q, k, v, b, h);
      for (std::int64_t i = 0; i < a.seq; ++i) {
        softmax_row(view, i, d, scale, p);
        const double* q_row = view.q + i * view.q_stride;
        const std::size_t q_at = view.q_offset + static_cast<std::size_t>(i * view.q_stride);
        const double* do_row = &d_out[q_at];
        // dP = dO V^T; the softmax's gradient is dS = P (dP - sum_j P dP).
        double mean = 0;
        for (std::int64_t j = 0; j <= i; ++j) mean += p[j] * (dp[j] = dot(do_row, view.v + j * view.kv_stride, d));
        for (std::int64_t j = 0; j <= i; ++j) {
          const double ds = scale * p[j] * (dp[j] - mean);
          const std::size_t kv_at = view.kv_offset + static_cast<std::size_t>(j * view.kv_stride);
          for (std::int64_t c = 0; c < d; ++c) {
            g.dq[q_at + c] += ds * view.k[j * view.kv_stride + c];
            // The group's query heads share K and V: their gradients sum.
            g.dk[kv_at + c] += ds * q_row[c];
            g.dv[kv_at + c] += p[j] * do_row[c];
          }
        }
      }
    }
  return g;
}

}  // namespace redline::train_ref
