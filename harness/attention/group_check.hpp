// The check of one attention result on large shapes without the full CPU
// reference (which costs s^2 d per head, minutes at s = 8K): one KV group of
// one batch element (its g = a_q / a_kv query heads, stacked as g*s query
// rows, and its K and V), compared on sampled rows with the exact math in
// double.
//   query row r (O, LSE, dQ): r's scores over its visible keys, exact;
//   key row j (dK, dV): dV[j] = sum_r P[r,j] dO[r] and dK[j] = sum_r dS[r,j]
//     q[r] over every query row r, with P[r,j] from the result's own LSE and
//     D[r] = dO[r] . O[r] from its own O: s*d per key row instead of s^2 d.
//     The result's LSE and O are checked on the sampled query rows; a wrong
//     normalizer or O elsewhere still moves dK and dV.
// With sample budgets at least g*s and s every row is checked: on small
// shapes this is the full reference.
#pragma once

#include <cstdint>
#include <vector>

#include "harness/attention/attention_reference.hpp"
#include "harness/attention/attention_shape.hpp"

namespace redline {

// One KV group's tensors as doubles (the GPU's stored values converted).
// q, o, d_o, dq: g*s rows of d; lse: g*s; k, v, dk, dv: s rows of d. Query
// row r is head r / s of the group, sequence position r % s.
struct GroupTensors {
  std::vector<double> q, k, v, o, lse, d_o, dq, dk, dv;
};

struct GroupCheck {
  TensorError o, lse, dq, dk, dv;  // relative errors over the sampled rows
  std::int64_t query_rows = 0, key_rows = 0;  // how many were checked
};

// `shape` gives s, d, the group size a_q / a_kv and causal (batch is
// ignored). With `backward` false only O and LSE are read and checked.
// `query_samples`, `key_samples`: rows checked, spread evenly (first and
// last included). Throws std::invalid_argument for tensors of the wrong size.
GroupCheck check_group(const AttentionShape& shape, const GroupTensors& t, bool backward,
                       std::int64_t query_samples = 64, std::int64_t key_samples = 32);

// `count` indices spread evenly over [0, total), first and last included;
// every index when count >= total.
std::vector<std::int64_t> spread_indices(std::int64_t total, std::int64_t count);

}  // namespace redline
