#include "harness/attention/attention_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace redline {
namespace {

void check_size(const std::vector<double>& tensor, std::int64_t expected, const char* name) {
  if (static_cast<std::int64_t>(tensor.size()) != expected)
    throw std::invalid_argument(std::string(name) + " holds " + std::to_string(tensor.size()) + " elements, not " +
                                std::to_string(expected));
}

void check_inputs(const AttentionShape& shape, const std::vector<double>& q, const std::vector<double>& k,
                  const std::vector<double>& v) {
  validate(shape);
  check_size(q, query_elements(shape), "q");
  check_size(k, kv_elements(shape), "k");
  check_size(v, kv_elements(shape), "v");
}

// Where one head's s x d block starts in its tensor.
struct HeadOffsets {
  std::int64_t query = 0;  // in Q, O, dO, dQ
  std::int64_t kv = 0;     // in K, V, dK, dV: the KV head this query head reads
};

HeadOffsets head_offsets(const AttentionShape& shape, std::int64_t b, std::int64_t h) {
  const std::int64_t group = shape.heads / shape.kv_heads;
  const std::int64_t block = shape.seq * shape.head_dim;
  return {(b * shape.heads + h) * block, (b * shape.kv_heads + h / group) * block};
}

double dot(const double* x, const double* y, std::int64_t n) {
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

// Keys query row i may see: all of them, or 0..i under the causal mask.
std::int64_t visible_keys(const AttentionShape& shape, std::int64_t i) { return shape.causal ? i + 1 : shape.seq; }

// One query row's probabilities over its visible keys (into p) and the
// log-sum-exp of its scaled scores. The row maximum is subtracted before exp,
// so no score overflows.
double softmax_row(const double* q_row, const double* k_head, std::int64_t visible, std::int64_t d, double scale,
                   std::vector<double>& p) {
  double max_score = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < visible; ++j) {
    p[j] = scale * dot(q_row, k_head + j * d, d);
    max_score = std::max(max_score, p[j]);
  }
  double sum = 0;
  for (std::int64_t j = 0; j < visible; ++j) sum += p[j] = std::exp(p[j] - max_score);
  for (std::int64_t j = 0; j < visible; ++j) p[j] /= sum;
  return max_score + std::log(sum);
}

}  // namespace

AttentionForward attention_forward_reference(const AttentionShape& shape, const std::vector<double>& q,
                                             const std::vector<double>& k, const std::vector<double>& v) {
  check_inputs(shape, q, k, v);
  const std::int64_t s = shape.seq, d = shape.head_dim;
  const double scale = softmax_scale(shape);
  AttentionForward out;
  out.o.assign(static_cast<std::size_t>(query_elements(shape)), 0.0);
  out.lse.assign(static_cast<std::size_t>(shape.batch * shape.heads * s), 0.0);
  std::vector<double> p(static_cast<std::size_t>(s));
  for (std::int64_t b = 0; b < shape.batch; ++b)
    for (std::int64_t h = 0; h < shape.heads; ++h) {
      const HeadOffsets at = head_offsets(shape, b, h);
      for (std::int64_t i = 0; i < s; ++i) {
        const std::int64_t visible = visible_keys(shape, i);
        out.lse[(b * shape.heads + h) * s + i] = softmax_row(&q[at.query + i * d], &k[at.kv], visible, d, scale, p);
        double* o_row = &out.o[at.query + i * d];
        for (std::int64_t j = 0; j < visible; ++j)
          for (std::int64_t c = 0; c < d; ++c) o_row[c] += p[j] * v[at.kv + j * d + c];
      }
    }
  return out;
}

AttentionGradients attention_backward_reference(const AttentionShape& shape, const std::vector<double>& q,
                                                const std::vector<double>& k, const std::vector<double>& v,
                                                const std::vector<double>& d_o) {
  check_inputs(shape, q, k, v);
  check_size(d_o, query_elements(shape), "d_o");
  const std::int64_t s = shape.seq, d = shape.head_dim;
  const double scale = softmax_scale(shape);
  AttentionGradients g;
  g.dq.assign(q.size(), 0.0);
  g.dk.assign(k.size(), 0.0);
  g.dv.assign(v.size(), 0.0);
  std::vector<double> p(static_cast<std::size_t>(s)), dp(static_cast<std::size_t>(s));
  for (std::int64_t b = 0; b < shape.batch; ++b)
    for (std::int64_t h = 0; h < shape.heads; ++h) {
      const HeadOffsets at = head_offsets(shape, b, h);
      for (std::int64_t i = 0; i < s; ++i) {
        const std::int64_t visible = visible_keys(shape, i);
        const double* q_row = &q[at.query + i * d];
        const double* do_row = &d_o[at.query + i * d];
        softmax_row(q_row, &k[at.kv], visible, d, scale, p);
        // dP = dO V^T; the softmax's gradient subtracts the row's P-weighted
        // mean of dP (which equals dO . O), giving dS = P (dP - mean).
        double mean = 0;
        for (std::int64_t j = 0; j < visible; ++j) mean += p[j] * (dp[j] = dot(do_row, &v[at.kv + j * d], d));
        double* dq_row = &g.dq[at.query + i * d];
        for (std::int64_t j = 0; j < visible; ++j) {
          const double ds = scale * p[j] * (dp[j] - mean);
          for (std::int64_t c = 0; c < d; ++c) {
            dq_row[c] += ds * k[at.kv + j * d + c];
            // K and V are shared by the group's query heads: their gradients sum.
            g.dk[at.kv + j * d + c] += ds * q_row[c];
            g.dv[at.kv + j * d + c] += p[j] * do_row[c];
          }
        }
      }
    }
  return g;
}

TensorError relative_error(const std::vector<double>& x, const std::vector<double>& ref) {
  if (x.size() != ref.size())
    throw std::invalid_argument("relative_error: " + std::to_string(x.size()) + " elements against " +
                                std::to_string(ref.size()));
  TensorError e;
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) ++e.nonfinite;
    diff += (x[i] - ref[i]) * (x[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  // A non-finite element makes the error infinite, so a check that reads
  // only `relative` still fails it; a zero reference is matched only exactly.
  if (e.nonfinite > 0) e.relative = std::numeric_limits<double>::infinity();
  else if (norm > 0) e.relative = std::sqrt(diff / norm);
  else e.relative = diff > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  return e;
}

bool within_tolerance(const TensorError& error, double tolerance) {
  return error.nonfinite == 0 && error.relative <= tolerance;
}

}  // namespace redline
