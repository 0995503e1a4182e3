#include "harness/attention/attention_shape.hpp"

#include <cmath>
#include <stdexcept>

namespace redline {

std::string describe(const AttentionShape& shape) {
  std::string text = "b=" + std::to_string(shape.batch) + " s=" + std::to_string(shape.seq) +
                     " a_q=" + std::to_string(shape.heads) + " a_kv=" + std::to_string(shape.kv_heads) +
                     " d=" + std::to_string(shape.head_dim);
  return shape.causal ? text + " causal" : text;
}

void validate(const AttentionShape& shape) {
  auto at_least_one = [](std::int64_t value, const char* field) {
    if (value < 1) throw std::invalid_argument(std::string(field) + " = " + std::to_string(value) + " is below 1");
  };
  at_least_one(shape.batch, "batch");
  at_least_one(shape.seq, "seq");
  at_least_one(shape.heads, "heads");
  at_least_one(shape.kv_heads, "kv_heads");
  at_least_one(shape.head_dim, "head_dim");
  if (shape.heads % shape.kv_heads != 0)
    throw std::invalid_argument("kv_heads = " + std::to_string(shape.kv_heads) + " does not divide heads = " +
                                std::to_string(shape.heads));
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
