#include "harness/gemm/transformer_gemms.hpp"

#include <algorithm>
#include <numeric>

#include "harness/core/usage_error.hpp"

namespace redline {
namespace {

void require_positive(const char* flag, std::int64_t value) {
  if (value < 1) throw UsageError(flag, std::to_string(value), "must be at least 1");
}

void require_divisible(const char* flag, std::int64_t value, std::int64_t by, const std::string& by_what) {
  if (value % by != 0)
    throw UsageError(flag, std::to_string(value), "must be divisible by " + by_what + " (" + std::to_string(by) + ")");
}

void add_linear(std::vector<StepGemm>& out, const std::string& layer, std::int64_t tokens, std::int64_t in,
                std::int64_t features_out, std::int64_t count) {
  out.push_back({layer, GemmPass::forward, features_out, tokens, in, count});
  out.push_back({layer, GemmPass::backward_data, in, tokens, features_out, count});
  out.push_back({layer, GemmPass::backward_weight, in, features_out, tokens, count});
}

std::int64_t round_up(std::int64_t value, std::int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

const char* gemm_pass_name(GemmPass pass) {
  switch (pass) {
    case GemmPass::forward: return "fwd";
    case GemmPass::backward_data: return "bwd_data";
    case GemmPass::backward_weight: return "bwd_weight";
  }
  return "?";
}

const char* padded_dim_name(PaddedDim dim) {
  switch (dim) {
    case PaddedDim::vocab: return "vocab";
    case PaddedDim::ffn: return "ffn";
    case PaddedDim::hidden: return "hidden";
  }
  return "?";
}

void validate_transformer_shape(const TransformerShape& s) {
  require_positive("--hidden", s.hidden);
  require_positive("--heads", s.heads);
  require_positive("--ffn", s.ffn);
  require_positive("--vocab", s.vocab);
  require_positive("--seq", s.seq);
  require_positive("--mbs", s.micro_batch);
  require_positive("--tp", s.tensor_parallel);
  require_positive("--layers", s.layers);
  require_divisible("--hidden", s.hidden, s.heads, "--heads");
  if (s.kv_heads != 0) {
    require_positive("--kv-heads", s.kv_heads);
    if (s.heads % s.kv_heads != 0)
      throw UsageError("--kv-heads", std::to_string(s.kv_heads),
                       "must divide --heads (" + std::to_string(s.heads) + "): query heads share KV heads in whole groups");
  }
  const std::string tp = "--tp";
  require_divisible("--heads", s.heads, s.tensor_parallel, tp);
  if (s.kv_heads != 0) require_divisible("--kv-heads", s.kv_heads, s.tensor_parallel, tp);
  require_divisible("--hidden", s.hidden, s.tensor_parallel, tp);
  require_divisible("--ffn", s.ffn, s.tensor_parallel, tp);
  require_divisible("--vocab", s.vocab, s.tensor_parallel, tp);
}

std::vector<StepGemm> transformer_step_gemms(const TransformerShape& s) {
  validate_transformer_shape(s);
  const std::int64_t tokens = s.tokens(), tp = s.tensor_parallel, h = s.hidden;
  std::vector<StepGemm> gemms;
  // Q is H wide; K and V each one head size per KV head.
  const std::int64_t qkv_out = h + 2 * s.kv_head_count() * (h / s.heads);
  add_linear(gemms, "qkv", tokens, h, qkv_out / tp, s.layers);
  add_linear(gemms, "attn_out", tokens, h / tp, h, s.layers);
  add_linear(gemms, "ffn_up", tokens, h, s.ffn / tp, s.layers);
  if (s.swiglu) add_linear(gemms, "ffn_gate", tokens, h, s.ffn / tp, s.layers);
  add_linear(gemms, "ffn_down", tokens, s.ffn / tp, h, s.layers);
  add_linear(gemms, "logits", tokens, h, s.vocab / tp, 1);
  return gemms;
}

double step_gemm_flop(const std::vector<StepGemm>& gemms) {
  double flop = 0;
  for (const auto& g : gemms)
    flop += 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
            static_cast<double>(g.count);
  return flop;
}

std::int64_t dim_value(const TransformerShape& s, PaddedDim dim) {
  switch (dim) {
    case PaddedDim::vocab: return s.vocab;
    case PaddedDim::ffn: return s.ffn;
    case PaddedDim::hidden: return s.hidden;
  }
  return 0;
}

TransformerShape with_dim(TransformerShape s, PaddedDim dim, std::int64_t value) {
  switch (dim) {
    case PaddedDim::vocab: s.vocab = value; break;
    case PaddedDim::ffn: s.ffn = value; break;
    case PaddedDim::hidden: s.hidden = value; break;
  }
  return s;
}

std::vector<std::int64_t> padding_candidates(const TransformerShape& s, PaddedDim dim,
                                             std::optional<std::int64_t> model_hint) {
  const std::int64_t current = dim_value(s, dim);
  const std::int64_t limit = current + current / 4;
  std::vector<std::int64_t> candidates;
  for (std::int64_t multiple : {64, 128, 256}) {
    std::int64_t step = multiple * s.tensor_parallel;
    // A hidden size must keep a whole head size, per rank as well.
    if (dim == PaddedDim::hidden) step = std::lcm(step, s.heads);
    std::int64_t padded = round_up(current, step);
    if (padded == current) continue;
    candidates.push_back(padded);
  }
  if (model_hint) {
    bool keeps_shape_valid = *model_hint % s.tensor_parallel == 0 &&
                             (dim != PaddedDim::hidden || *model_hint % s.heads == 0);
    if (keeps_shape_valid) candidates.push_back(*model_hint);
  }
  std::erase_if(candidates, [&](std::int64_t v) { return v <= current || v > limit; });
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  return candidates;
}

bool layer_depends_on(const std::string& layer, PaddedDim dim) {
  switch (dim) {
    case PaddedDim::vocab: return layer == "logits";
    case PaddedDim::ffn: return layer.starts_with("ffn_");
    case PaddedDim::hidden: return true;
  }
  return false;
}

}  // namespace redline
