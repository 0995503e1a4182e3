// attention_bench plan: every head layout of a hidden size with its
// constraints, the fused kernels that run its head dim, its FLOPs and the
// model's predicted efficiency, ranked with the reason for each loss. No GPU.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "bench/attention/subcommands.hpp"
#include "harness/attention/layout_ranking.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/tool_main.hpp"

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
    row.status = "skipped";
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
  report.summary.emplace_back("predicted", "the training block's efficiency: projections and attention forward and "
                                           "backward, on cuDNN's fused kernel where it runs d, else unfused "
                                           "(docs/attention_bench.md)");
}

void add_ranking(Report& report, const std::vector<LayoutPrediction>& predictions) {
  std::vector<RankCandidate> candidates;
  std::vector<std::size_t> row_of;
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    if (!predictions[i].feasible) continue;
    candidates.push_back({describe(predictions[i].layout), predictions[i].block_efficiency, predictions[i].block_factors});
    row_of.push_back(i);
  }
  if (candidates.empty()) {
    report.summary.emplace_back("ranking", "no feasible layout: see each row's note");
    return;
  }
  for (const RankedLayout& r : rank_layouts(candidates)) {
    report.rows[row_of[r.index]].metric("rank", r.rank);
    const std::string label = r.rank == 1 ? "best" : "rank " + std::to_string(r.rank);
    report.summary.emplace_back(label, candidates[r.index].label + " (predicted " +
                                           format_number(100 * r.score, 1) + "%): " + ranking_verdict(r));
  }
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
  add_ranking(report, predictions);
  write_reports(report, f.output);
  return kExitOk;
}

}  // namespace redline::attention
