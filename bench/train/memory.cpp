// train_step_bench memory: the memory model alone, per recompute mode: the
// parameters, the state (weights, gradients, master weights, AdamW), the
// activations this implementation keeps (per layer and in all, beside
// Korthikanti's formula), the backward's working set, the workspaces, the
// predicted peak, and the largest micro-batch that fits --gpu-memory. No GPU.
// The shape and the step's model FLOPs are stated too, so a script that
// builds the same model (scripts/compare-train-step) reads them from here.
#include <cmath>
#include <string>
#include <vector>

#include "bench/train/subcommands.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/report.hpp"
#include "harness/train/activation_memory.hpp"
#include "harness/train/step_flops.hpp"

namespace redline::train {
namespace {

std::vector<Recompute> modes_of(const std::string& text) {
  if (text == "all") return {Recompute::none, Recompute::selective, Recompute::full};
  if (const auto mode = parse_recompute(text)) return {*mode};
  throw UsageError("--recompute", text, "must be none, selective, full or all");
}

Row mode_row(const ModelConfig& c, std::int64_t seq, std::int64_t mbs, const MemoryPrediction& p,
             const std::optional<std::int64_t>& gpu_memory) {
  Row row;
  row.param("recompute", recompute_name(p.mode)).param("model", c.name).param("layers", std::to_string(c.layers));
  row.param("seq", std::to_string(seq)).param("mbs", std::to_string(mbs));
  row.metric("params", static_cast<double>(p.parameters));
  row.metric("matmul_params", static_cast<double>(parameter_counts(c).matmul()));
  row.metric("model_gflop", step_flops(c, mbs, seq, p.mode).model / 1e9);
  row.metric("weight_bytes", static_cast<double>(p.state.weights)).metric("grad_bytes", static_cast<double>(p.state.grads));
  row.metric("master_bytes", static_cast<double>(p.state.master));
  row.metric("optimizer_bytes", static_cast<double>(p.state.optimizer));
  row.metric("activation_bytes", static_cast<double>(p.activation_bytes));
  row.metric("activation_bytes_per_layer", static_cast<double>(p.activation_bytes_per_layer));
  row.metric("korthikanti_bytes_per_layer", p.korthikanti_per_layer);
  row.metric("working_bytes", static_cast<double>(p.working_bytes));
  row.metric("workspace_bytes", static_cast<double>(p.workspace));
  row.metric("peak_bytes", static_cast<double>(p.peak()));
  if (gpu_memory) row.metric("max_mbs", static_cast<double>(max_fitting_mbs(c, seq, p.mode, *gpu_memory)));
  return row;
}

std::string mode_summary(const ModelConfig& c, std::int64_t seq, const MemoryPrediction& p,
                         const std::optional<std::int64_t>& gpu_memory) {
  std::string text = "peak " + format_gib(static_cast<double>(p.peak())) + ": state " + format_gib(static_cast<double>(p.state.total())) +
                     ", activations " + format_gib(static_cast<double>(p.activation_bytes)) + " (" +
                     format_gib(static_cast<double>(p.activation_bytes_per_layer)) + " per layer), backward working set " +
                     format_gib(static_cast<double>(p.working_bytes)) + ", workspaces " + format_gib(static_cast<double>(p.workspace));
  if (gpu_memory) {
    const std::int64_t fits = max_fitting_mbs(c, seq, p.mode, *gpu_memory);
    text += fits > 0 ? "; fits micro-batches up to " + std::to_string(fits) + " in " + format_gib(static_cast<double>(*gpu_memory))
                     : "; even micro-batch 1 does not fit " + format_gib(static_cast<double>(*gpu_memory));
  }
  return text;
}

// "hidden 4096, heads 32, ..., preset_layers 32": name-value pairs a script
// parses back exactly (format_general's 15 digits round-trip these values).
std::string shape_summary(const ModelConfig& c, const std::string& preset) {
  std::string text;
  for (const auto& [name, value] :
       {std::pair{"hidden", static_cast<double>(c.hidden)}, {"heads", static_cast<double>(c.heads)},
        {"kv_heads", static_cast<double>(c.kv_heads)}, {"head_dim", static_cast<double>(c.head_dim())},
        {"ffn", static_cast<double>(c.ffn)}, {"vocab", static_cast<double>(c.vocab)}, {"rope_theta", c.rope_theta},
        {"norm_eps", c.norm_eps}})
    text += (text.empty() ? "" : ", ") + std::string(name) + " " + format_general(value, 15);
  if (const auto whole = model_preset(preset)) text += ", preset_layers " + std::to_string(whole->layers);
  return text;
}

}  // namespace

int run_memory(const MemoryFlags& f) {
  const ModelConfig config = model_of(f.model);
  const std::int64_t seq = seq_of(f.model), mbs = mbs_of(f.model);
  require_countable(config, seq, "--mbs", mbs, AttentionChoice::cudnn);
  const auto modes = modes_of(f.recompute);
  const auto gpu_memory = gpu_memory_bytes_of(f.gpu_memory);
  validate_output_paths(f.output);

  Report report = start_report("train_step_bench", capture_environment());
  const ParameterCounts counts = parameter_counts(config);
  report.summary.emplace_back("model", config.name + ", " + std::to_string(config.layers) + " layers: " +
                                           format_number(static_cast<double>(counts.total()) / 1e9, 3) +
                                           "e9 parameters (" + format_number(counts.embedding / 1e9, 3) +
                                           "e9 embedding, " + format_number(counts.logits / 1e9, 3) + "e9 logits)");
  report.summary.emplace_back("shape", shape_summary(config, f.model.preset));
  report.summary.emplace_back("flops", "model_gflop: 6 x matmul_params x tokens + 3 x the causal attention forward "
                                       "(4 b a_q d s(s+1)/2 per layer), MFU's numerator; recompute not counted");
  for (Recompute mode : modes) {
    const MemoryPrediction p = predict_memory(config, mbs, seq, mode);
    report.rows.push_back(mode_row(config, seq, mbs, p, gpu_memory));
    report.summary.emplace_back(recompute_name(mode), mode_summary(config, seq, p, gpu_memory));
  }
  const MemoryPrediction none = predict_memory(config, mbs, seq, Recompute::none);
  report.summary.emplace_back(
      "korthikanti", "s b h (34 + 5 a s / h) = " + format_gib(none.korthikanti_per_layer) + " per layer (34 s b h alone, " +
                         "without the attention scores a fused kernel never keeps: " +
                         format_gib(34.0 * static_cast<double>(seq * mbs * config.hidden)) + ") against this stack's " +
                         format_gib(static_cast<double>(none.activation_bytes_per_layer)) +
                         " with recompute none: no dropout masks, GQA's smaller K and V, SwiGLU's three ffn-wide "
                         "tensors, fp32 LSE and rstd (docs/train_step_bench.md)");
  write_reports(report, f.output);
  return kExitOk;
}

}  // namespace redline::train
