// attention_bench plan: every head layout of a hidden size with its
// constraints, the fused kernels that run its head dim, its FLOPs and the
// model's predicted efficiency, ranked with the reason for each loss. No GPU.
#include <algorithm>
#include <cmath>
#include <optional>
#include <limits>
#include <string>
#include <vector>

#include "bench/attention/subcommands.hpp"
#include "harness/attention/attention_fit.hpp"
#include "harness/attention/layout_ranking.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/tool_main.hpp"
#include "harness/tracking/references.hpp"

namespace redline::attention {
namespace {

constexpr double kNotApplicable = std::numeric_limits<double>::quiet_NaN();

std::string support_text(const char* kernel, const FusedSupport& fwd, const FusedSupport& bwd) {
  auto one = [](const FusedSupport& s) { return s.supported ? s.reason : "no: " + s.reason; };
  return std::string(kernel) + " fwd " + one(fwd) + ", bwd " + one(bwd);
}

// The speed constraints a layout misses, "d % 64 == 0 (largest power-of-two ...)".
std::string missed_constraints(const HeadLayout& layout) {
  std::string text;
  for (const auto& c : layout_constraints(layout))
    if (!c.met) text += (text.empty() ? "" : "; ") + c.name + " not met: " + c.detail;
  return text;
}

Row layout_row(const LayoutGrid& grid, const LayoutPrediction& p) {
  Row row;
  row.param("hidden", std::to_string(grid.hidden)).param("heads", std::to_string(p.layout.heads));
  row.param("kv_heads", std::to_string(p.layout.kv_heads)).param("tp", std::to_string(p.layout.tp));
  const bool whole = grid.hidden % p.layout.heads == 0;
  row.param("head_dim", whole ? std::to_string(grid.hidden / p.layout.heads) : "");
  row.param("batch", std::to_string(grid.batches.front())).param("seq", std::to_string(grid.seq));
  row.param("causal", grid.causal ? "yes" : "no").param("dtype", attention_dtype_name(grid.dtype));
  row.note = missed_constraints(p.layout);
  if (!p.feasible) {
    row.status = RowStatus::skipped;
    row.note = "infeasible: " + row.note;
    return row;
  }
  row.metric("fwd_gflop", attention_forward_flop(p.shape) / 1e9);
  row.metric("bwd_gflop", attention_backward_flop(p.shape) / 1e9);
  row.metric("block_gflop", p.block_flop / 1e9);
  row.metric("fused_fwd_efficiency", p.fused_fwd.efficiency).metric("fused_bwd_efficiency", p.fused_bwd.efficiency);
  row.metric("unfused_fwd_efficiency", p.unfused_fwd.efficiency);
  row.metric("unfused_bwd_efficiency", p.unfused_bwd.efficiency);
  row.metric("projection_efficiency", p.projection_efficiency);
  row.metric("predicted_efficiency", p.block_efficiency);
  row.metric("fa3_head_dim", p.flash3_fwd.supported ? static_cast<double>(p.flash3_fwd.kernel_head_dim) : kNotApplicable);
  const std::string kernels = support_text("cuDNN", p.cudnn_fwd, p.cudnn_bwd) + "; " +
                              support_text("FlashAttention-3", p.flash3_fwd, p.flash3_bwd);
  row.note = row.note.empty() ? kernels : row.note + "; " + kernels;
  return row;
}

void add_model_summary(Report& report, const LayoutGrid& grid, const ModelGpu& gpu) {
  report.summary.emplace_back(
      "gpu", gpu.name + ": " + std::to_string(gpu.sm_count) + " SMs, sm_" + std::to_string(gpu.compute_capability) +
                 ", one exp costs as much as " + format_number(gpu.flop_per_exp, 0) + " bf16 tensor FLOPs");
  report.summary.emplace_back(
      "flops", std::string("forward 4 b a_q s^2 d") +
                   (grid.causal ? " with s^2 replaced by the exact s(s+1)/2 unmasked scores" : "") +
                   ", backward 2.5x forward; the block adds the QKV and output projections (forward and backward); "
                   "per GPU (a_q / T heads)");
  report.summary.emplace_back("predicted", "the training block's time (projections and attention forward and "
                                           "backward, on cuDNN's fused kernel where it runs d, else unfused), layouts "
                                           "ranked by it; `slower` is time; parameters " + gpu.fit.source +
                                           " (docs/attention_bench.md)");
}

// The reference's measured block per layout at this shape (the plan's batch,
// on the fused path): its time in ms and its row; nullopt for each layout it lacks.
struct MeasuredBlock {
  double ms = 0;
  const ResultRow* row = nullptr;
};

std::vector<std::optional<MeasuredBlock>> measured_blocks(const std::optional<Reference>& reference, const LayoutGrid& grid,
                                                          const std::vector<LayoutPrediction>& feasible) {
  std::vector<std::optional<MeasuredBlock>> blocks;
  for (const LayoutPrediction& p : feasible) {
    const MeasuredAttention shape{p.layout, grid.batches.front(), grid.seq, grid.causal,
                                  attention_dtype_name(grid.dtype), "block_cudnn", "train"};
    const ResultRow* row = reference ? find_measured(reference->results, shape) : nullptr;
    blocks.push_back(row ? std::optional<MeasuredBlock>({p.block_flop / (row->metrics.at("tflops") * 1e12) * 1e3, row})
                         : std::nullopt);
  }
  return blocks;
}

// "H200, 2026-11-26, transcribed": where a measured row came from.
std::string measured_where(const Reference& reference, const ResultRow& row) {
  return reference.folder.filename().string() + ", " + row.timestamp_utc.substr(0, 10) +
         (row.run_id.rfind("transcribed", 0) == 0 ? ", transcribed" : "");
}

// The sweep that would measure this plan's layouts.
std::string settling_sweep(const PlanFlags& f, const LayoutGrid& grid) {
  return "attention_bench sweep --hidden " + std::to_string(grid.hidden) + " --heads " + f.layout.heads +
         (f.layout.kv_heads.empty() ? "" : " --kv-heads " + f.layout.kv_heads) + " --seq " + std::to_string(grid.seq) +
         " --batch " + std::to_string(grid.batches.front()) + (grid.causal ? " --causal" : "") +
         " --dtype " + attention_dtype_name(grid.dtype);
}

// Says whether a measurement stands behind the ranking: the measured times
// beside the predicted ones where this GPU's reference holds every layout,
// else that the ranking is the model's guess and what would settle it.
void add_reference_check(Report& report, const PlanFlags& f, const LayoutGrid& grid,
                         const std::vector<LayoutPrediction>& feasible, const std::vector<double>& predicted_ms) {
  const auto reference = find_reference(references_root(), grid.gpu.model);
  const auto measured = measured_blocks(reference, grid, feasible);
  const bool all = std::all_of(measured.begin(), measured.end(), [](const auto& m) { return m.has_value(); });
  if (!all) {
    report.summary.emplace_back(
        "measured", "none: the ranking is the model's guess (" +
                        (reference ? "the " + grid.gpu.model + " reference, " + reference->folder.string() + ", lacks this shape"
                                   : "no reference results for " + grid.gpu.model) +
                        "); `" + settling_sweep(f, grid) + "` on this GPU settles it");
    return;
  }
  double best = measured.front()->ms;
  for (const auto& m : measured) best = std::min(best, m->ms);
  const double best_predicted = *std::min_element(predicted_ms.begin(), predicted_ms.end());
  for (std::size_t i = 0; i < feasible.size(); ++i) {
    const std::string gap = measured[i]->ms == best ? "fastest" : format_percent(measured[i]->ms / best - 1) + " slower";
    report.summary.emplace_back("measured", describe(feasible[i].layout) + ": " + format_number(measured[i]->ms, 2) +
                                                " ms, " + gap + " (predicted " +
                                                format_percent(predicted_ms[i] / best_predicted - 1) + "), on " +
                                                measured_where(*reference, *measured[i]->row));
  }
}

void add_ranking(Report& report, const PlanFlags& f, const LayoutGrid& grid,
                 const std::vector<LayoutPrediction>& predictions, const ModelGpu& gpu) {
  std::vector<RankCandidate> candidates;
  std::vector<LayoutPrediction> feasible;
  std::vector<double> predicted_ms;
  std::vector<std::size_t> row_of;
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    if (!predictions[i].feasible) continue;
    const double ms = predicted_block_ms(predictions[i], gpu);
    report.rows[i].metric("predicted_block_ms", ms);
    candidates.push_back({describe(predictions[i].layout), ms, predictions[i].block_factors});
    feasible.push_back(predictions[i]);
    predicted_ms.push_back(ms);
    row_of.push_back(i);
  }
  if (candidates.empty())
    throw UsageError("--heads", f.layout.heads,
                     "no feasible layout of hidden " + std::to_string(grid.hidden) + ": " + report.rows.front().note);
  const std::vector<RankedLayout> ranked = rank_layouts(candidates);
  if (ranked.front().rank == 0)  // fastest first: the first cannot run, so none can
    throw UsageError("--dtype", attention_dtype_name(grid.dtype),
                     "no layout of hidden " + std::to_string(grid.hidden) + " runs in it here (" +
                         candidates[ranked.front().index].label + ": " + ranking_verdict(ranked.front()) + ")");
  for (const RankedLayout& r : ranked) {
    if (r.rank > 0) report.rows[row_of[r.index]].metric("rank", r.rank);
    const std::string label = r.rank == 1 ? "best" : r.rank == 0 ? "cannot run" : "rank " + std::to_string(r.rank);
    report.summary.emplace_back(label, candidates[r.index].label + " (predicted " + format_number(r.time, 2) + " ms, " +
                                           format_number(100 * feasible[r.index].block_efficiency, 1) +
                                           "% of the " + attention_dtype_name(grid.dtype) + " peak): " + ranking_verdict(r));
  }
  add_reference_check(report, f, grid, feasible, predicted_ms);
}

}  // namespace

int run_plan(const PlanFlags& f) {
  const LayoutGrid grid = layout_grid(f.layout, "H100", false);
  validate_output_paths(f.output);
  const ModelGpu gpu = model_gpu(grid.gpu);
  Report report = start_report("attention_bench", capture_environment());
  std::vector<LayoutPrediction> predictions;
  for (const HeadLayout& layout : grid.layouts) {
    predictions.push_back(predict_layout(layout, grid.batches.front(), grid.seq, grid.causal, grid.dtype, gpu));
    report.rows.push_back(layout_row(grid, predictions.back()));
  }
  add_model_summary(report, grid, gpu);
  add_ranking(report, f, grid, predictions, gpu);
  write_reports(report, f.output);
  return kExitOk;
}

}  // namespace redline::attention
