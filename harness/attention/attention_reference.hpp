// Attention on the CPU in double precision: the reference every GPU path is
// checked against on small shapes (large ones are checked against the
// unfused GPU path, itself checked here). Tensors in BHSD order
// (attention_shape.hpp); the inputs are the values the GPU stored (a bf16
// input converted exactly to double), so only the GPU's arithmetic differs.
#pragma once

#include <cstdint>
#include <vector>

#include "harness/attention/attention_shape.hpp"

namespace redline {

struct AttentionForward {
  std::vector<double> o;    // query_elements
  std::vector<double> lse;  // b * a_q * s: each row's log-sum-exp of its scaled, masked scores
};

// O = softmax(scale * Q K^T, masked when causal) V, scale = softmax_scale.
// Throws std::invalid_argument for an invalid shape or a tensor of the wrong
// size (both functions).
AttentionForward attention_forward_reference(const AttentionShape& shape, const std::vector<double>& q,
                                             const std::vector<double>& k, const std::vector<double>& v);

struct AttentionGradients {
  std::vector<double> dq;  // query_elements
  std::vector<double> dk;  // kv_elements: summed over the query heads sharing a KV head
  std::vector<double> dv;  // kv_elements
};

// The gradients of sum(O * dO) with respect to Q, K and V.
AttentionGradients attention_backward_reference(const AttentionShape& shape, const std::vector<double>& q,
                                                const std::vector<double>& k, const std::vector<double>& v,
                                                const std::vector<double>& d_o);

// How far a GPU result is from the reference: ||x - ref|| / ||ref||
// (Frobenius), and the count of non-finite elements (NaN never passes).
// Any non-finite element makes `relative` infinite, so a check that reads
// only `relative` fails it too; a zero reference is matched only exactly.
// Throws std::invalid_argument when the sizes differ.
struct TensorError {
  double relative = 0;
  std::int64_t nonfinite = 0;
};
TensorError relative_error(const std::vector<double>& x, const std::vector<double>& ref);

// No non-finite element and relative <= tolerance.
bool within_tolerance(const TensorError& error, double tolerance);

}  // namespace redline
