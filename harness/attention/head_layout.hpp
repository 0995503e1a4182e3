// One way to split a hidden size h into attention heads: a_q query heads of
// d = h / a_q, a_kv KV heads (GQA/MQA) and tensor parallelism T, with the
// constraints it must meet to exist and the ones that decide its speed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/attention/attention_shape.hpp"

namespace redline {

struct HeadLayout {
  std::int64_t hidden = 1;    // h
  std::int64_t heads = 1;     // a_q
  std::int64_t kv_heads = 1;  // a_kv
  std::int64_t tp = 1;        // T: each GPU runs a_q / T query and a_kv / T KV heads
};

// h / a_q, rounded down (the first constraint says whether it is whole).
// Throws std::invalid_argument when a field is below 1.
std::int64_t head_dim(const HeadLayout& layout);

struct LayoutConstraint {
  std::string name;      // "a_q % a_kv == 0"
  bool required = true;  // false: the layout exists either way, but runs slower without it
  bool met = false;
  std::string detail;    // why, with the numbers: "32 query heads share 8 KV heads in groups of 4"
};

// In order: the required ones (h % a_q, a_q % a_kv, a_q % T, a_kv % T), then
// the speed ones on d (multiple of 8, of 64, power of two).
std::vector<LayoutConstraint> layout_constraints(const HeadLayout& layout);

// Every required constraint met.
bool layout_feasible(const HeadLayout& layout);

// The largest power of two dividing `value` (>= 1): 128 -> 128, 80 -> 16,
// 160 -> 32. The co-design study (arXiv 2401.14489) found attention GEMM
// throughput tracking it: 8 or more fast, 2-4 slower, odd slowest.
std::int64_t power_of_two_factor(std::int64_t value);

// `--heads auto`: every head count whose d = h / a is whole and within
// [min_head_dim, max_head_dim], ascending (fewest heads, largest d, first).
std::vector<std::int64_t> auto_head_counts(std::int64_t hidden, std::int64_t min_head_dim = 32,
                                           std::int64_t max_head_dim = 256);

// What one GPU of the tensor-parallel group runs. Throws std::invalid_argument
// for a layout that is not feasible.
AttentionShape per_gpu_shape(const HeadLayout& layout, std::int64_t batch, std::int64_t seq, bool causal);

// "a_q=32 a_kv=8 d=128" (and " tp=2" when T > 1).
std::string describe(const HeadLayout& layout);

}  // namespace redline
