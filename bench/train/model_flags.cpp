#include "bench/train/model_flags.hpp"

#include <stdexcept>

#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/train/activation_memory.hpp"

namespace redline::train {
namespace {

std::string preset_list() {
  std::string text;
  for (const auto& name : model_preset_names()) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// A shape flag, when given, replaces the preset's value.
void override(std::int64_t& field, const char* flag, const std::string& text, std::int64_t most) {
  if (!text.empty()) field = parse_count_between(flag, text, 1, most);
}

}  // namespace

void add_model_flags(CLI::App& sub, ModelFlags& f) {
  sub.add_option("--preset", f.preset, "A real model's shapes: " + preset_list())->type_name("NAME");
  sub.add_option("--layers", f.layers, "Layers built (default: the preset's; with a preset, a slice of it)")
      ->type_name("N");
  sub.add_option("--hidden", f.hidden, "Hidden size (overrides the preset's)")->type_name("H");
  sub.add_option("--heads", f.heads, "Query heads")->type_name("A");
  sub.add_option("--kv-heads", f.kv_heads, "KV heads (GQA; default: as many as query heads)")->type_name("K");
  sub.add_option("--ffn", f.ffn, "SwiGLU width")->type_name("F");
  sub.add_option("--vocab", f.vocab, "Vocabulary size")->type_name("V");
  sub.add_option("--seq", f.seq, "Sequence length (default 4096)")->type_name("S");
}

void add_mbs_flag(CLI::App& sub, ModelFlags& f) {
  sub.add_option("--mbs", f.mbs, "Micro-batch size (default 1)")->type_name("M");
}

ModelConfig model_of(const ModelFlags& f) {
  ModelConfig c;
  if (!f.preset.empty()) {
    const auto preset = model_preset(f.preset);
    if (!preset) throw UsageError("--preset", f.preset, "unknown (known: " + preset_list() + ")");
    c = *preset;
  } else {
    c.name = "custom";
    for (const auto& [flag, text] : {std::pair{"--hidden", f.hidden}, {"--heads", f.heads}, {"--ffn", f.ffn},
                                     {"--layers", f.layers}, {"--vocab", f.vocab}})
      if (text.empty()) throw UsageError(std::string("give --preset NAME, or ") + flag + " with the other shape flags");
  }
  override(c.hidden, "--hidden", f.hidden, 1 << 20);
  override(c.heads, "--heads", f.heads, 1 << 14);
  if (f.kv_heads.empty() && f.preset.empty()) c.kv_heads = c.heads;
  override(c.kv_heads, "--kv-heads", f.kv_heads, 1 << 14);
  override(c.ffn, "--ffn", f.ffn, 1 << 22);
  override(c.layers, "--layers", f.layers, 1 << 12);
  override(c.vocab, "--vocab", f.vocab, 1 << 24);
  try {
    validate(c);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--hidden/--heads/--kv-heads", std::to_string(c.hidden) + "/" + std::to_string(c.heads) + "/" +
                                                        std::to_string(c.kv_heads), e.what());
  }
  return c;
}

std::int64_t seq_of(const ModelFlags& f) { return parse_count_between("--seq", f.seq, 1, std::int64_t{1} << 22); }
std::int64_t mbs_of(const ModelFlags& f) { return parse_count_between("--mbs", f.mbs, 1, std::int64_t{1} << 20); }

std::optional<std::int64_t> gpu_memory_bytes_of(const std::string& text) {
  if (text.empty()) return std::nullopt;
  // Below a megabyte it would be a typo (1e-300 became 0 bytes); above, the
  // model would stop counting before the memory filled.
  const double gib_bytes = static_cast<double>(std::int64_t{1} << 30);
  const double least = 0.001, most = static_cast<double>(kMostTensorBytes) / gib_bytes;
  const double gib = parse_number("--gpu-memory", text);
  if (!(gib >= least && gib <= most))
    throw UsageError("--gpu-memory", text,
                     "must be between " + format_number(least, 3) + " and " + format_number(most, 0) + " GiB");
  return static_cast<std::int64_t>(gib * gib_bytes);
}

// Each of --seq and --mbs has its own range, but their product can still
// overflow the model's int64 byte counts (negative peaks): refused here.
void require_countable(const ModelConfig& config, std::int64_t seq, const char* mbs_flag, std::int64_t mbs,
                       AttentionChoice attention) {
  if (memory_countable(config, mbs, seq, attention)) return;
  const TensorSize largest = largest_tensor(config, mbs, seq, attention);
  const double tib = static_cast<double>(std::int64_t{1} << 40);
  throw UsageError("--seq/" + std::string(mbs_flag), std::to_string(seq) + "/" + std::to_string(mbs),
                   "a micro-batch of " + std::to_string(seq * mbs) + " tokens would need a " +
                       format_number(largest.bytes / tib, 0) + " TiB " + largest.name + " tensor; the memory model " +
                       "counts at most " + format_number(static_cast<double>(kMostTensorBytes) / tib, 0) +
                       " TiB a tensor (lower --seq or " + mbs_flag + ")");
}

}  // namespace redline::train
