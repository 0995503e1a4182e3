#include "harness/train/activation_memory.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace redline {
namespace {

constexpr int kBf16 = 2, kFp32 = 4, kInt32 = 4;

struct Widths {
  std::int64_t tokens, h, k, f, heads, vocab;
};

Widths widths(const ModelConfig& c, std::int64_t mbs, std::int64_t seq) {
  validate(c);
  if (mbs < 1 || seq < 1) throw std::invalid_argument("mbs and seq must be at least 1");
  return {mbs * seq, c.hidden, c.kv_dim(), c.ffn, c.heads, c.vocab};
}

// Every tensor `none` keeps, in the table's order (activation_memory.hpp).
std::vector<SavedTensor> all_layer_tensors(const Widths& w) {
  return {{"x", w.tokens * w.h, kBf16},        {"rstd1", w.tokens, kFp32},           {"n1", w.tokens * w.h, kBf16},
          {"q", w.tokens * w.h, kBf16},        {"k", w.tokens * w.k, kBf16},         {"v", w.tokens * w.k, kBf16},
          {"o", w.tokens * w.h, kBf16},        {"lse", w.heads * w.tokens, kFp32},   {"h1", w.tokens * w.h, kBf16},
          {"rstd2", w.tokens, kFp32},          {"n2", w.tokens * w.h, kBf16},        {"gate", w.tokens * w.f, kBf16},
          {"up", w.tokens * w.f, kBf16},       {"act", w.tokens * w.f, kBf16}};
}

bool kept(const std::string& name, Recompute mode) {
  if (mode == Recompute::none) return true;
  if (mode == Recompute::full) return name == "x";
  return name != "n1" && name != "n2" && name != "act";
}

std::int64_t total_bytes(const std::vector<SavedTensor>& tensors) {
  std::int64_t bytes = 0;
  for (const auto& t : tensors) bytes += t.bytes();
  return bytes;
}

}  // namespace

const char* recompute_name(Recompute mode) {
  switch (mode) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

std::optional<Recompute> parse_recompute(const std::string& text) {
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full})
    if (text == recompute_name(mode)) return mode;
  return std::nullopt;
}

std::vector<SavedTensor> saved_per_layer(const ModelConfig& config, std::int64_t mbs, std::int64_t seq, Recompute mode) {
  std::vector<SavedTensor> out;
  for (auto& t : all_layer_tensors(widths(config, mbs, seq)))
    if (kept(t.name, mode)) out.push_back(std::move(t));
  return out;
}

std::vector<SavedTensor> saved_outside_layers(const ModelConfig& config, std::int64_t mbs, std::int64_t seq) {
  const Widths w = widths(config, mbs, seq);
  return {{"final_x", w.tokens * w.h, kBf16},  {"final_rstd", w.tokens, kFp32}, {"final_n", w.tokens * w.h, kBf16},
          {"logits", w.tokens * w.vocab, kBf16}, {"losses", w.tokens, kFp32},     {"tokens", w.tokens, kInt32},
          {"targets", w.tokens, kInt32}};
}

std::vector<SavedTensor> backward_working_set(const ModelConfig& config, std::int64_t mbs, std::int64_t seq,
                                              Recompute mode) {
  const Widths w = widths(config, mbs, seq);
  std::vector<SavedTensor> out = {{"d_residual_a", w.tokens * w.h, kBf16}, {"d_residual_b", w.tokens * w.h, kBf16},
                                  {"d_n", w.tokens * w.h, kBf16},          {"d_o", w.tokens * w.h, kBf16},
                                  {"d_q", w.tokens * w.h, kBf16},          {"d_k", w.tokens * w.k, kBf16},
                                  {"d_v", w.tokens * w.k, kBf16},          {"d_gate", w.tokens * w.f, kBf16},
                                  {"d_up", w.tokens * w.f, kBf16},         {"d_act", w.tokens * w.f, kBf16}};
  // The one layer being worked on gets back what its mode dropped.
  for (auto& t : all_layer_tensors(w))
    if (!kept(t.name, mode)) out.push_back({"recomputed_" + t.name, t.elements, t.element_bytes});
  return out;
}

std::vector<SavedTensor> unfused_attention_buffers(const ModelConfig& config, std::int64_t mbs, std::int64_t seq) {
  const Widths w = widths(config, mbs, seq);
  const std::int64_t scores = mbs * w.heads * seq * seq;
  return {{"bhsd_q", w.tokens * w.h, kBf16},   {"bhsd_k", w.tokens * w.k, kBf16},   {"bhsd_v", w.tokens * w.k, kBf16},
          {"bhsd_o", w.tokens * w.h, kBf16},   {"bhsd_d_o", w.tokens * w.h, kBf16}, {"bhsd_d_q", w.tokens * w.h, kBf16},
          {"bhsd_d_k", w.tokens * w.k, kBf16}, {"bhsd_d_v", w.tokens * w.k, kBf16}, {"scores", scores, kBf16},
          {"grad_scores", scores, kBf16}};
}

StateBytes state_bytes(const ModelConfig& config) {
  const std::int64_t n = parameter_counts(config).total();
  return {2 * n, 4 * n, 4 * n, 8 * n};
}

std::int64_t workspace_bytes(const ModelConfig& config, std::int64_t mbs, std::int64_t seq) {
  const Widths w = widths(config, mbs, seq);
  // cuDNN's backward: the fp32 dQ accumulator and the per-row softmax sums;
  // with fewer KV heads (GQA) also dK and dV at the query heads' count, in
  // bf16, before their sum over each group (cuDNN 9.19 on an H200: exactly
  // these bytes more in each of 7 bf16 GQA cases, none in 9 MHA ones).
  const std::int64_t full_head_grads = w.k < w.h ? 2 * w.tokens * w.h * kBf16 : 0;
  return cublaslt_workspace_bytes() + w.tokens * w.h * kFp32 + w.heads * w.tokens * kFp32 + full_head_grads;
}

std::int64_t cublaslt_workspace_bytes() { return std::int64_t{32} << 20; }

NormGradChunks norm_grad_chunks(std::int64_t rows, std::int64_t width, std::int64_t scratch_bytes) {
  constexpr std::int64_t kMaxChunks = 64, kLanes = 8;
  if (rows < 1 || width < 1) throw std::invalid_argument("norm_grad_chunks: rows and width must be at least 1");
  const std::int64_t fitting = std::min(kMaxChunks, scratch_bytes / (width * kFp32));
  if (fitting < 1)
    throw std::invalid_argument("norm_grad_chunks: " + std::to_string(scratch_bytes) + " bytes of scratch hold no " +
                                std::to_string(width) + "-column fp32 sums");
  const std::int64_t even = (rows + fitting - 1) / fitting;
  NormGradChunks c;
  c.rows_per_chunk = (even + kLanes - 1) / kLanes * kLanes;
  c.chunks = (rows + c.rows_per_chunk - 1) / c.rows_per_chunk;
  return c;
}

TensorSize largest_tensor(const ModelConfig& config, std::int64_t mbs, std::int64_t seq, AttentionChoice attention) {
  validate(config);
  const double b = static_cast<double>(mbs), s = static_cast<double>(seq), tokens = b * s;
  // The tokens x hidden tensors (x, q, o) too: with a huge hidden size and
  // tiny ffn, vocab and scores they are the largest, on either path.
  std::vector<TensorSize> candidates = {{"logits", tokens * static_cast<double>(config.vocab) * kBf16},
                                        {"gate", tokens * static_cast<double>(config.ffn) * kBf16},
                                        {"x", tokens * static_cast<double>(config.hidden) * kBf16}};
  if (attention == AttentionChoice::cudnn)
    candidates.push_back({"dq_accumulator", tokens * static_cast<double>(config.hidden) * kFp32});
  else
    candidates.push_back({"scores", b * static_cast<double>(config.heads) * s * s * kBf16});
  return *std::max_element(candidates.begin(), candidates.end(),
                           [](const TensorSize& x, const TensorSize& y) { return x.bytes < y.bytes; });
}

bool memory_countable(const ModelConfig& config, std::int64_t mbs, std::int64_t seq, AttentionChoice attention) {
  return largest_tensor(config, mbs, seq, attention).bytes <= static_cast<double>(kMostTensorBytes);
}

MemoryPrediction predict_memory(const ModelConfig& config, std::int64_t mbs, std::int64_t seq, Recompute mode,
                                AttentionChoice attention) {
  if (!memory_countable(config, mbs, seq, attention))
    throw std::invalid_argument("mbs " + std::to_string(mbs) + " x seq " + std::to_string(seq) +
                                ": a tensor would pass the 64 TiB the memory model counts");
  MemoryPrediction p;
  p.mode = mode;
  p.parameters = parameter_counts(config).total();
  p.state = state_bytes(config);
  p.activation_bytes_per_layer = total_bytes(saved_per_layer(config, mbs, seq, mode));
  p.activation_bytes = p.activation_bytes_per_layer * config.layers + total_bytes(saved_outside_layers(config, mbs, seq));
  p.working_bytes = total_bytes(backward_working_set(config, mbs, seq, mode));

  // The unfused path has no cuDNN workspace; the stack counts its buffers
  // with the workspaces (AllocatedBytes).
  p.workspace = attention == AttentionChoice::cudnn
                    ? workspace_bytes(config, mbs, seq)
                    : cublaslt_workspace_bytes() + total_bytes(unfused_attention_buffers(config, mbs, seq));
  const double s = static_cast<double>(seq), b = static_cast<double>(mbs), h = static_cast<double>(config.hidden);
  p.korthikanti_per_layer = s * b * h * (34 + 5 * static_cast<double>(config.heads) * s / h);
  return p;
}

std::int64_t max_fitting_mbs(const ModelConfig& config, std::int64_t seq, Recompute mode, std::int64_t memory_bytes,
                             AttentionChoice attention) {
  auto fits = [&](std::int64_t mbs) {
    return memory_countable(config, mbs, seq, attention) &&
           predict_memory(config, mbs, seq, mode, attention).peak() <= memory_bytes;
  };
  if (!fits(1)) return 0;
  // The peak grows with the micro-batch: double to bracket, then bisect. The
  // doubling stops by 2^46 at the latest, where the logits alone (at least
  // 2 bytes a token) pass kMostTensorBytes, so `hi` cannot overflow.
  std::int64_t lo = 1, hi = 2;
  while (fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace redline
