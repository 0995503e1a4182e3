#include "harness/attention/head_layout.hpp"

#include <stdexcept>

namespace redline {
namespace {

std::string text(std::int64_t value) { return std::to_string(value); }

void check_fields(const HeadLayout& layout) {
  if (layout.hidden < 1 || layout.heads < 1 || layout.kv_heads < 1 || layout.tp < 1)
    throw std::invalid_argument("a head layout needs hidden, heads, kv_heads and tp of at least 1");
}

LayoutConstraint divides(std::string name, std::int64_t whole, std::int64_t part, std::string met_detail,
                         std::string unmet_detail) {
  const bool met = whole % part == 0;
  return {std::move(name), true, met, met ? std::move(met_detail) : std::move(unmet_detail)};
}

std::vector<LayoutConstraint> required_constraints(const HeadLayout& l) {
  const std::int64_t d = l.hidden / l.heads;
  return {
      divides("h % a_q == 0", l.hidden, l.heads, "d = " + text(l.hidden) + " / " + text(l.heads) + " = " + text(d),
              text(l.hidden) + " / " + text(l.heads) + " is not whole: no head dim"),
      // GQA: each KV head serves a whole group of query heads.
      divides("a_q % a_kv == 0", l.heads, l.kv_heads,
              text(l.heads) + " query heads in groups of " + text(l.heads / l.kv_heads) + " per KV head",
              text(l.kv_heads) + " KV heads cannot share " + text(l.heads) + " query heads evenly"),
      // Tensor parallelism gives each GPU whole heads.
      divides("a_q % T == 0", l.heads, l.tp, text(l.heads / l.tp) + " query heads per GPU",
              text(l.heads) + " query heads do not split over " + text(l.tp) + " GPUs"),
      // Megatron-core splits KV heads the same way and asserts it
      // (megatron/core/transformer/attention.py: num_query_groups_per_partition
      // = divide(num_query_groups, world_size)).
      divides("a_kv % T == 0", l.kv_heads, l.tp, text(l.kv_heads / l.tp) + " KV heads per GPU",
              text(l.kv_heads) + " KV heads do not split over " + text(l.tp) +
                  " GPUs (Megatron-core asserts it; replicating them costs memory)"),
  };
}

std::vector<LayoutConstraint> speed_constraints(std::int64_t d) {
  const std::int64_t factor = power_of_two_factor(d);
  const std::string largest = "largest power-of-two factor of d = " + text(d) + " is " + text(factor);
  return {
      // 8 bf16/fp16 elements are 16 bytes: the alignment cuBLASLt's fastest
      // kernels want of a leading dimension, and the fused kernels' minimum.
      {"d % 8 == 0", false, d % 8 == 0,
       d % 8 == 0 ? largest : largest + ": rows off 16 bytes; no fused kernel (FlashAttention-3, cuDNN need 8)"},
      // Tensor-core pipelines take K in slices of 64 16-bit elements (128 bytes).
      {"d % 64 == 0", false, d % 64 == 0,
       d % 64 == 0 ? largest : largest + ": a GEMM with K = d runs a partial last slice of 64"},
      {"d is a power of two", false, factor == d, largest},
  };
}

}  // namespace

std::int64_t head_dim(const HeadLayout& layout) {
  check_fields(layout);
  return layout.hidden / layout.heads;
}

std::vector<LayoutConstraint> layout_constraints(const HeadLayout& layout) {
  check_fields(layout);
  std::vector<LayoutConstraint> all = required_constraints(layout);
  // Without a whole d there is nothing to say about its speed.
  if (!all.front().met) return all;
  for (auto& c : speed_constraints(head_dim(layout))) all.push_back(std::move(c));
  return all;
}

bool layout_feasible(const HeadLayout& layout) {
  for (const auto& c : layout_constraints(layout))
    if (c.required && !c.met) return false;
  return true;
}

std::int64_t power_of_two_factor(std::int64_t value) {
  if (value < 1) throw std::invalid_argument("power_of_two_factor needs a value of at least 1");
  return value & -value;
}

std::vector<std::int64_t> auto_head_counts(std::int64_t hidden, std::int64_t min_head_dim,
                                           std::int64_t max_head_dim) {
  if (hidden < 1 || min_head_dim < 1 || max_head_dim < min_head_dim)
    throw std::invalid_argument("auto_head_counts needs hidden >= 1 and 1 <= min_head_dim <= max_head_dim");
  std::vector<std::int64_t> counts;
  for (std::int64_t heads = 1; heads <= hidden / min_head_dim; ++heads) {
    const std::int64_t d = hidden / heads;
    if (hidden % heads == 0 && d >= min_head_dim && d <= max_head_dim) counts.push_back(heads);
  }
  return counts;
}

AttentionShape per_gpu_shape(const HeadLayout& layout, std::int64_t batch, std::int64_t seq, bool causal) {
  if (!layout_feasible(layout)) throw std::invalid_argument("not a feasible head layout: " + describe(layout));
  AttentionShape shape;
  shape.batch = batch;
  shape.seq = seq;
  shape.heads = layout.heads / layout.tp;
  shape.kv_heads = layout.kv_heads / layout.tp;
  shape.head_dim = head_dim(layout);
  shape.causal = causal;
  validate(shape);
  return shape;
}

std::string describe(const HeadLayout& layout) {
  check_fields(layout);
  std::string out = "a_q=" + text(layout.heads) + " a_kv=" + text(layout.kv_heads);
  if (layout.hidden % layout.heads == 0) out += " d=" + text(head_dim(layout));
  return layout.tp > 1 ? out + " tp=" + text(layout.tp) : out;
}

}  // namespace redline
