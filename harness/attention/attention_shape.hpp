// One attention problem: batch, sequence, query and KV heads, head dim,
// causal or not, and the FLOP conventions every attention figure uses.
// Pure C++: the head-sizing plan, the GPU cases and the CPU reference all
// count the same way.
//
// FLOPs (stated in the tool's output and docs):
//   forward  = 4 * b * a_q * d * scores, scores = s*s, or for causal the exact
//              count of unmasked scores s*(s+1)/2 (not s*s/2);
//   backward = 2.5 x forward: the five GEMMs of a fused backward (the
//              gradients of the two forward GEMMs, 4, and the recompute of
//              S, 1). The unfused path keeps P and runs four, and is
//              credited by the same convention so the paths compare on one
//              count (so its backward TFLOPS read 25% above its own GEMM
//              work);
// FLOPs follow the query heads under GQA/MQA: K and V are shared, not cheaper.
#pragma once

#include <cstdint>
#include <string>

namespace redline {

struct AttentionShape {
  std::int64_t batch = 1;     // b
  std::int64_t seq = 1;       // s (queries and keys alike: self-attention)
  std::int64_t heads = 1;     // a_q, query heads
  std::int64_t kv_heads = 1;  // a_kv: a_q for MHA, 1 for MQA; divides a_q
  std::int64_t head_dim = 1;  // d
  bool causal = false;
};

// "b=2 s=4096 a_q=32 a_kv=8 d=128 causal".
std::string describe(const AttentionShape& shape);

// Throws std::invalid_argument naming the field when a size is below 1 or
// a_kv does not divide a_q.
void validate(const AttentionShape& shape);

// Scores a head computes: s*s, or s*(s+1)/2 with the causal mask.
double unmasked_scores(const AttentionShape& shape);
double attention_forward_flop(const AttentionShape& shape);
double attention_backward_flop(const AttentionShape& shape);

// 1/sqrt(d), the softmax scale every path uses.
double softmax_scale(const AttentionShape& shape);

// Tensors are dense, in BHSD order: element (b, h, s, d) of Q, O, dO, dQ is
// at ((b * a_q + h) * s_len + s) * d_len + d; K, V, dK, dV have a_kv heads
// in the same order. Query head h reads KV head h / (a_q / a_kv).
std::int64_t query_elements(const AttentionShape& shape);  // b * a_q * s * d
std::int64_t kv_elements(const AttentionShape& shape);     // b * a_kv * s * d

}  // namespace redline
