#include "harness/attention/attention_shape.hpp"

#include <cmath>
#include <stdexcept>

#include "harness/core/checks.hpp"

namespace redline {

std::string describe(const AttentionShape& shape) {
  std::string text = "b=" + std::to_string(shape.batch) + " s=" + std::to_string(shape.seq) +
                     " a_q=" + std::to_string(shape.heads) + " a_kv=" + std::to_string(shape.kv_heads) +
                     " d=" + std::to_string(shape.head_dim);
  return shape.causal ? text + " causal" : text;
}

void validate(const AttentionShape& shape) {
  require_at_least_one(shape.batch, "batch");
  require_at_least_one(shape.seq, "seq");
  require_at_least_one(shape.heads, "heads");
  require_at_least_one(shape.kv_heads, "kv_heads");
  require_at_least_one(shape.head_dim, "head_dim");
  require_divides(shape.kv_heads, "kv_heads", shape.heads, "heads");
}

double unmasked_scores(const AttentionShape& shape) {
  const auto s = static_cast<double>(shape.seq);
  // Query i sees keys 0..i: 1 + 2 + ... + s. Exact in double up to s = 2^26.
  return shape.causal ? s * (s + 1) / 2 : s * s;
}

double attention_forward_flop(const AttentionShape& shape) {
  // Two GEMMs per head, Q K^T and P V, each 2 * scores * d.
  return 4.0 * static_cast<double>(shape.batch) * static_cast<double>(shape.heads) *
         static_cast<double>(shape.head_dim) * unmasked_scores(shape);
}

double attention_backward_flop(const AttentionShape& shape) { return 2.5 * attention_forward_flop(shape); }

double softmax_scale(const AttentionShape& shape) { return 1.0 / std::sqrt(static_cast<double>(shape.head_dim)); }

std::int64_t query_elements(const AttentionShape& shape) {
  return shape.batch * shape.heads * shape.seq * shape.head_dim;
}

std::int64_t kv_elements(const AttentionShape& shape) {
  return shape.batch * shape.kv_heads * shape.seq * shape.head_dim;
}

}  // namespace redline
