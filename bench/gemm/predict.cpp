// gemm_bench predict: the tile and wave quantization model alone, for any
// GPU, with or without one, at a fixed clock and with the fitted power-cap
// parameter; shapes losing more than 10% get the smallest larger size, up to
// 2x, that recovers (loses less than 5%).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/gemm/subcommands.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/gpu/gemm_dtype.hpp"
#include "harness/gpu/gemm_model.hpp"
#include "harness/gpu/gpu_peaks.hpp"
#include "harness/tracking/sweep_charts.hpp"

namespace redline::gemm {
namespace {

// The shapes and the model's fixed inputs, checked.
struct PredictPlan {
  std::vector<GemmSize> shapes;
  GemmProblem base;  // tile, SMs, CTAs per SM, split-K
  std::optional<GpuPeaks> gpu;
  GemmDim pad_dim = GemmDim::n;
};


GemmDim pad_dim(const PredictFlags& f, std::size_t m_count, std::size_t n_count) {
  if (f.pad_dim == "m") return GemmDim::m;
  if (f.pad_dim == "n") return GemmDim::n;
  if (!f.pad_dim.empty()) throw UsageError("--pad-dim", f.pad_dim, "must be m or n (K does not change the tile count)");
  // The dimension the user sweeps is the one being chosen; otherwise N, where
  // vocab and FFN widths sit in activations x weights.
  return m_count > 1 && n_count == 1 ? GemmDim::m : GemmDim::n;
}

// The largest shape has the most tiles: if its count fits, every one does.
void check_tile_count_fits(const GemmProblem& base, const GemmSize& largest) {
  GemmProblem p = base;
  p.m = largest.m, p.n = largest.n, p.k = largest.k;
  try {
    predict_gemm(p);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--m/--n/--tile/--split-k",
                     std::to_string(p.m) + "/" + std::to_string(p.n) + "/" + tile_text(p.tile) + "/" +
                         std::to_string(p.split_k),
                     e.what());
  }
}

PredictPlan plan_of(const PredictFlags& f) {
  PredictPlan plan;
  plan.shapes = checked_grid(f.m, f.n, f.k);
  const auto tile = parse_tile(f.tile);
  if (!tile)
    throw UsageError("--tile", f.tile,
                     "must be ROWSxCOLS of the C tile, e.g. 128x256, each edge 1 to " + std::to_string(kMaxTileEdge));
  plan.base.tile = *tile;
  if (!f.gpu.empty()) {
    plan.gpu = lookup_gpu_peaks(f.gpu);
    if (!plan.gpu)
      throw UsageError("--gpu", f.gpu, "unknown GPU (known: " + known_gpu_models() + "); give --sms instead");
    plan.base.sm_count = plan.gpu->sm_count;
  }
  // --sms wins over the table: a MIG slice or a GPU with SMs disabled.
  if (!f.sms.empty()) plan.base.sm_count = static_cast<int>(parse_count_between("--sms", f.sms, 1, 100000));
  if (plan.base.sm_count == 0) throw UsageError("give the SM count with --sms S or a GPU with --gpu NAME");
  plan.base.ctas_per_sm = static_cast<int>(parse_count_between("--ctas-per-sm", f.ctas_per_sm, 1, 64));
  plan.base.split_k = static_cast<int>(parse_count_between("--split-k", f.split_k, 1, 1024));
  plan.pad_dim = pad_dim(f, dim_axis("--m", f.m).size(), dim_axis("--n", f.n).size());
  check_tile_count_fits(plan.base, plan.shapes.back());
  return plan;
}

// How the padded shape's time compares: the launch's waves set it.
std::string time_text(const GemmPrediction& before, const GemmPrediction& after) {
  if (after.launch_waves == before.launch_waves)
    return "same predicted time, " + std::to_string(before.launch_waves) + " waves";
  return std::to_string(after.launch_waves) + " waves instead of " + std::to_string(before.launch_waves);
}

// The padding advice for a shape that loses too much: the row's note and a
// summary line. The advice is the first size up to 2x that recovers (loses
// less than 5%); where none does, it says so, with the best size it saw, so
// a flagged shape never goes without a word.
std::pair<std::string, std::string> padding_advice(const GemmProblem& p, const GemmPrediction& r, GemmDim dim,
                                                   Row& row) {
  const std::string dim_name = dim == GemmDim::m ? "m" : "n";
  const std::string key = "pad m=" + std::to_string(p.m) + " n=" + std::to_string(p.n);
  const auto a = first_recovering_size(p, dim);
  if (!a) {
    // The bound the search used: 2x, or the first tile multiple where that is larger.
    const std::int64_t limit = padding_search_limit(p, dim);
    std::string none = "no " + dim_name + " up to " + std::to_string(limit) + " (2x, or the first tile multiple above) " +
                       "loses less than " + format_percent(1 - kRecoveredEfficiency);
    if (const auto best = nearest_recovering_size(p, dim, 0.0, kPaddingMaxGrowth))
      none += "; best " + dim_name + " " + std::to_string(best->to) + ": predicted efficiency " +
              format_number(best->after.predicted_efficiency, 3);
    row.note += "; " + none;
    return {key, none};
  }
  // The gain is in efficiency: work done per unit of time. The padded shape
  // takes no less time; it does more in it.
  const bool same_waves = a->after.launch_waves == r.launch_waves;
  row.note += "; " + dim_name + " " + std::to_string(a->to) + ": efficiency +" + format_percent(a->gain) + ", " +
              (same_waves ? std::string("same time") : time_text(r, a->after));
  return {key, dim_name + " -> " + std::to_string(a->to) + ": predicted efficiency " +
                   format_number(r.predicted_efficiency, 3) + " -> " + format_number(a->after.predicted_efficiency, 3) +
                   " (+" + format_percent(a->gain) + "; " + time_text(r, a->after) + ")"};
}

Row prediction_row(const GemmProblem& p, const GemmPrediction& r) {
  Row row;
  row.param("m", std::to_string(p.m)).param("n", std::to_string(p.n)).param("k", std::to_string(p.k));
  row.param("tile", tile_text(p.tile)).param("sms", std::to_string(p.sm_count));
  row.param("ctas_per_sm", std::to_string(p.ctas_per_sm)).param("split_k", std::to_string(p.split_k));
  // The FLOP count gemm_bench times a shape with: its one definition, read by scripts/compare-gemm.
  row.metric("gflop", gemm_flop_count(p.m, p.n, p.k) / 1e9);
  row.metric("tiles", static_cast<double>(r.tiles)).metric("waves", r.waves);
  row.metric("full_waves", static_cast<double>(r.full_waves));
  row.metric("tile_efficiency", r.tile_efficiency).metric("wave_efficiency", r.wave_efficiency);
  row.metric("predicted_efficiency", r.predicted_efficiency);
  row.metric("predicted_efficiency_power_capped", power_capped_efficiency(r));
  return row;
}

void add_model_summary(Report& report, const PredictPlan& plan, std::size_t flagged) {
  const GemmProblem& base = plan.base;
  report.summary.emplace_back(
      "model", "tile " + tile_text(base.tile) + ", " + std::to_string(base.sm_count) + " SMs x " +
                   std::to_string(base.ctas_per_sm) + " CTA/SM = " + std::to_string(base.sm_count * base.ctas_per_sm) +
                   " tiles per wave, split-K " + std::to_string(base.split_k) +
                   (plan.gpu ? ", SM count of " + plan.gpu->model : std::string()));
  report.summary.emplace_back("flagged", std::to_string(flagged) + " of " + std::to_string(report.rows.size()) +
                                             " shapes lose more than " +
                                             format_percent(1 - kQuantizationLossThreshold) + " to quantization");
  report.summary.emplace_back("power cap", power_cap_model_summary());
}

}  // namespace

int run_predict(const PredictFlags& f) {
  const PredictPlan plan = plan_of(f);
  validate_output_paths(f.output);

  Report report = start_report("gemm_bench", capture_environment());
  std::size_t flagged = 0;
  std::vector<std::pair<std::string, std::string>> advice_lines;
  for (const GemmSize& shape : plan.shapes) {
    GemmProblem p = plan.base;
    p.m = shape.m, p.n = shape.n, p.k = shape.k;
    const GemmPrediction r = predict_gemm(p);
    Row row = prediction_row(p, r);
    if (r.predicted_efficiency < kQuantizationLossThreshold) {
      ++flagged;
      row.note = "loses " + format_percent(1 - r.predicted_efficiency);
      advice_lines.push_back(padding_advice(p, r, plan.pad_dim, row));
    }
    report.rows.push_back(std::move(row));
  }
  add_model_summary(report, plan, flagged);
  report.summary.insert(report.summary.end(), advice_lines.begin(), advice_lines.end());
  add_sweep_charts(report);
  write_reports(report, f.output);
  return kExitOk;
}

}  // namespace redline::gemm
