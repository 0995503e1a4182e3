#include "harness/attention/group_check.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace redline {
namespace {

struct GroupDims {
  std::int64_t g, s, d;
  bool causal;
  double scale;
  std::int64_t rows() const { return g * s; }
  // Keys query row r sees: all, or positions 0..r % s under the causal mask.
  std::int64_t visible(std::int64_t r) const { return causal ? r % s + 1 : s; }
};

void check_size(const std::vector<double>& t, std::int64_t expected, const char* name) {
  if (static_cast<std::int64_t>(t.size()) != expected)
    throw std::invalid_argument(std::string("check_group: ") + name + " holds " + std::to_string(t.size()) +
                                " elements, not " + std::to_string(expected));
}

double dot(const double* x, const double* y, std::int64_t n) {
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

// The checked elements of one tensor and their exact values, compared by
// relative_error (one rule for every check).
struct ErrorSum {
  std::vector<double> x, ref;
  void add(double value, double exact) {
    x.push_back(value);
    ref.push_back(exact);
  }
  TensorError error() const { return relative_error(x, ref); }
};

// Exact P of query row r over its visible keys, and its LSE.
double row_probabilities(const GroupDims& dims, const GroupTensors& t, std::int64_t r, std::vector<double>& p) {
  const std::int64_t n = dims.visible(r);
  double max_score = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < n; ++j) {
    p[j] = dims.scale * dot(&t.q[r * dims.d], &t.k[j * dims.d], dims.d);
    max_score = std::max(max_score, p[j]);
  }
  double sum = 0;
  for (std::int64_t j = 0; j < n; ++j) sum += p[j] = std::exp(p[j] - max_score);
  for (std::int64_t j = 0; j < n; ++j) p[j] /= sum;
  return max_score + std::log(sum);
}

void check_query_row(const GroupDims& dims, const GroupTensors& t, bool backward, std::int64_t r,
                     std::vector<double>& p, ErrorSum& o, ErrorSum& lse, ErrorSum& dq) {
  const std::int64_t n = dims.visible(r), d = dims.d;
  lse.add(t.lse[r], row_probabilities(dims, t, r, p));
  std::vector<double> o_row(d, 0.0);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t c = 0; c < d; ++c) o_row[c] += p[j] * t.v[j * d + c];
  for (std::int64_t c = 0; c < d; ++c) o.add(t.o[r * d + c], o_row[c]);
  if (!backward) return;
  // dS = scale * P (dP - D), D = dO . O (the exact O of this row).
  const double big_d = dot(&t.d_o[r * d], o_row.data(), d);
  std::vector<double> dq_row(d, 0.0);
  for (std::int64_t j = 0; j < n; ++j) {
    const double ds = dims.scale * p[j] * (dot(&t.d_o[r * d], &t.v[j * d], d) - big_d);
    for (std::int64_t c = 0; c < d; ++c) dq_row[c] += ds * t.k[j * d + c];
  }
  for (std::int64_t c = 0; c < d; ++c) dq.add(t.dq[r * d + c], dq_row[c]);
}

void check_key_row(const GroupDims& dims, const GroupTensors& t, std::int64_t j, ErrorSum& dk, ErrorSum& dv) {
  const std::int64_t d = dims.d;
  std::vector<double> dk_row(d, 0.0), dv_row(d, 0.0);
  for (std::int64_t r = 0; r < dims.rows(); ++r) {
    if (j >= dims.visible(r)) continue;
    const double p = std::exp(dims.scale * dot(&t.q[r * d], &t.k[j * d], d) - t.lse[r]);
    const double big_d = dot(&t.d_o[r * d], &t.o[r * d], d);
    const double ds = dims.scale * p * (dot(&t.d_o[r * d], &t.v[j * d], d) - big_d);
    for (std::int64_t c = 0; c < d; ++c) {
      dv_row[c] += p * t.d_o[r * d + c];
      dk_row[c] += ds * t.q[r * d + c];
    }
  }
  for (std::int64_t c = 0; c < d; ++c) {
    dk.add(t.dk[j * d + c], dk_row[c]);
    dv.add(t.dv[j * d + c], dv_row[c]);
  }
}

}  // namespace

std::vector<std::int64_t> spread_indices(std::int64_t total, std::int64_t count) {
  std::vector<std::int64_t> out;
  if (total <= 0 || count <= 0) return out;
  if (count >= total || count == 1) {
    for (std::int64_t i = 0; i < (count >= total ? total : 1); ++i) out.push_back(i);
    return out;
  }
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t index = i * (total - 1) / (count - 1);
    if (out.empty() || out.back() != index) out.push_back(index);
  }
  return out;
}

GroupCheck check_group(const AttentionShape& shape, const GroupTensors& t, bool backward, std::int64_t query_samples,
                       std::int64_t key_samples) {
  validate(shape);
  const GroupDims dims{shape.heads / shape.kv_heads, shape.seq, shape.head_dim, shape.causal, softmax_scale(shape)};
  const std::int64_t rows = dims.rows() * dims.d, keys = dims.s * dims.d;
  check_size(t.q, rows, "q");
  check_size(t.k, keys, "k");
  check_size(t.v, keys, "v");
  check_size(t.o, rows, "o");
  check_size(t.lse, dims.rows(), "lse");
  if (backward) {
    check_size(t.d_o, rows, "d_o");
    check_size(t.dq, rows, "dq");
    check_size(t.dk, keys, "dk");
    check_size(t.dv, keys, "dv");
  }
  ErrorSum o, lse, dq, dk, dv;
  std::vector<double> p(static_cast<std::size_t>(dims.s));
  GroupCheck result;
  for (std::int64_t r : spread_indices(dims.rows(), query_samples)) {
    check_query_row(dims, t, backward, r, p, o, lse, dq);
    ++result.query_rows;
  }
  if (backward)
    for (std::int64_t j : spread_indices(dims.s, key_samples)) {
      check_key_row(dims, t, j, dk, dv);
      ++result.key_rows;
    }
  result.o = o.error(), result.lse = lse.error(), result.dq = dq.error(), result.dk = dk.error(), result.dv = dv.error();
  return result;
}

}  // namespace redline
