// gemm_bench predict: the tile and wave quantization model of a GEMM shape,
// for any GPU, with or without one here (harness/gemm_model.hpp). The
// measuring subcommands (peak, sweep, model) come with the cuBLASLt kernels.
#include <iostream>
#include <optional>

#include "harness/axis.hpp"
#include "harness/environment.hpp"
#include "harness/gemm_model.hpp"
#include "harness/gpu_peaks.hpp"
#include "harness/tool_main.hpp"
#include "harness/units.hpp"
#include "harness/usage_error.hpp"

using namespace redline;

namespace {

struct PredictFlags {
  std::string m, n, k, tile, sms, gpu, ctas_per_sm = "1", split_k = "1", pad_dim;
  OutputOptions output;
};

// cuBLASLt takes 64-bit dimensions, but no single GEMM of a training step
// comes near 2^31 along one edge; the cap keeps tile counts far from overflow.
constexpr std::int64_t kMaxDim = (std::int64_t{1} << 31) - 1;
constexpr std::size_t kMaxPoints = 100000;

std::vector<std::int64_t> dim_axis(const char* flag, const std::string& text) {
  auto values = parse_axis(flag, text, AxisUnit::count);
  if (values.front() < 1) throw UsageError(flag, text, "GEMM dimensions must be at least 1");
  if (values.back() > kMaxDim) throw UsageError(flag, text, "GEMM dimensions must be at most 2^31-1");
  return values;
}

std::string percent_text(double fraction) { return format_number(100 * fraction, 1) + "%"; }

GemmDim pad_dim(const PredictFlags& f, std::size_t m_count, std::size_t n_count) {
  if (f.pad_dim == "m") return GemmDim::m;
  if (f.pad_dim == "n") return GemmDim::n;
  if (!f.pad_dim.empty()) throw UsageError("--pad-dim", f.pad_dim, "must be m or n (K does not change the tile count)");
  // The dimension the user sweeps is the one being chosen; otherwise N, where
  // vocab and FFN widths sit in activations x weights.
  return m_count > 1 && n_count == 1 ? GemmDim::m : GemmDim::n;
}

int run_predict(const PredictFlags& f) {
  const auto ms = dim_axis("--m", f.m), ns = dim_axis("--n", f.n), ks = dim_axis("--k", f.k);
  if (ms.size() * ns.size() * ks.size() > kMaxPoints)
    throw UsageError("--m/--n/--k give " + std::to_string(ms.size() * ns.size() * ks.size()) +
                     " shapes; at most " + std::to_string(kMaxPoints));
  const auto tile = parse_tile(f.tile);
  if (!tile) throw UsageError("--tile", f.tile, "must be ROWSxCOLS of the C tile, e.g. 128x256");

  GemmProblem base;
  base.tile = *tile;
  std::optional<GpuPeaks> gpu;
  if (!f.gpu.empty()) {
    gpu = lookup_gpu_peaks(f.gpu);
    if (!gpu) throw UsageError("--gpu", f.gpu, "unknown GPU (known: " + known_gpu_models() + "); give --sms instead");
    base.sm_count = gpu->sm_count;
  }
  // --sms wins over the table: a MIG slice or a GPU with SMs disabled.
  if (!f.sms.empty()) base.sm_count = static_cast<int>(parse_count_between("--sms", f.sms, 1, 100000));
  if (base.sm_count == 0) throw UsageError("give the SM count with --sms S or a GPU with --gpu NAME");
  base.ctas_per_sm = static_cast<int>(parse_count_between("--ctas-per-sm", f.ctas_per_sm, 1, 64));
  base.split_k = static_cast<int>(parse_count_between("--split-k", f.split_k, 1, 1024));
  const GemmDim dim = pad_dim(f, ms.size(), ns.size());
  const char* dim_name = dim == GemmDim::m ? "m" : "n";
  validate_output_paths(f.output);

  Report report = start_report("gemm_bench", capture_environment());
  std::size_t flagged = 0;
  std::vector<std::pair<std::string, std::string>> advice_lines;
  for (auto m : ms)
    for (auto n : ns)
      for (auto k : ks) {
        GemmProblem p = base;
        p.m = m, p.n = n, p.k = k;
        const GemmPrediction r = predict_gemm(p);
        Row row;
        row.param("m", std::to_string(m)).param("n", std::to_string(n)).param("k", std::to_string(k));
        row.param("tile", tile_text(p.tile)).param("sms", std::to_string(p.sm_count));
        row.param("ctas_per_sm", std::to_string(p.ctas_per_sm)).param("split_k", std::to_string(p.split_k));
        row.metric("tiles", static_cast<double>(r.tiles)).metric("waves", r.waves);
        row.metric("full_waves", static_cast<double>(r.full_waves));
        row.metric("tile_efficiency", r.tile_efficiency).metric("wave_efficiency", r.wave_efficiency);
        row.metric("predicted_efficiency", r.predicted_efficiency);
        if (r.predicted_efficiency < kQuantizationLossThreshold) {
          ++flagged;
          row.note = "loses " + percent_text(1 - r.predicted_efficiency);
          if (const auto a = nearest_recovering_size(p, dim)) {
            row.note += std::string("; ") + dim_name + " " + std::to_string(a->to) + ": +" + percent_text(a->gain);
            const std::string time = a->after.full_waves == r.full_waves
                                         ? "same predicted time, " + std::to_string(r.full_waves) + " waves"
                                         : std::to_string(a->after.full_waves) + " waves instead of " +
                                               std::to_string(r.full_waves);
            advice_lines.emplace_back("pad m=" + std::to_string(m) + " n=" + std::to_string(n),
                                      std::string(dim_name) + " -> " + std::to_string(a->to) +
                                          ": predicted efficiency " + format_number(r.predicted_efficiency, 3) +
                                          " -> " + format_number(a->after.predicted_efficiency, 3) + " (+" +
                                          percent_text(a->gain) + "; " + time + ")");
          }
        }
        report.rows.push_back(std::move(row));
      }

  report.summary.emplace_back(
      "model", "tile " + tile_text(base.tile) + ", " + std::to_string(base.sm_count) + " SMs x " +
                   std::to_string(base.ctas_per_sm) + " CTA/SM = " + std::to_string(base.sm_count * base.ctas_per_sm) +
                   " tiles per wave, split-K " + std::to_string(base.split_k) +
                   (gpu ? ", SM count of " + gpu->model : std::string()));
  report.summary.emplace_back("flagged", std::to_string(flagged) + " of " + std::to_string(report.rows.size()) +
                                             " shapes lose more than " +
                                             percent_text(1 - kQuantizationLossThreshold) + " to quantization");
  report.summary.insert(report.summary.end(), advice_lines.begin(), advice_lines.end());
  write_reports(report, f.output);
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GEMM throughput and its tile and wave quantization.", "gemm_bench"};
  app.require_subcommand(1);

  PredictFlags pf;
  CLI::App* predict = app.add_subcommand(
      "predict",
      "Tile and wave quantization model alone, for any GPU (no GPU needed): tiles, waves, tile, wave and "
      "predicted efficiency per shape; shapes losing more than 10% get the nearest larger size that recovers.");
  predict->add_option("--m", pf.m, "Rows of C: N, or a sweep 1,2,4 / A:B:STEP / A:B:xF")->required()->type_name("AXIS");
  predict->add_option("--n", pf.n, "Columns of C (same forms)")->required()->type_name("AXIS");
  predict->add_option("--k", pf.k, "Reduction dimension (same forms)")->required()->type_name("AXIS");
  predict->add_option("--tile", pf.tile, "C tile one CTA computes, ROWSxCOLS (e.g. 128x256)")->required()->type_name("RxC");
  predict->add_option("--sms", pf.sms, "SM count (overrides --gpu's)")->type_name("S");
  predict->add_option("--gpu", pf.gpu, "Take the SM count from the table: A100, H100, H200, B200")->type_name("NAME");
  predict->add_option("--ctas-per-sm", pf.ctas_per_sm, "CTAs resident per SM (default 1)")->type_name("C");
  predict->add_option("--split-k", pf.split_k, "Split-K factor: tiles x this many CTAs (default 1)")->type_name("S");
  predict->add_option("--pad-dim", pf.pad_dim, "Dimension padding advice grows: m or n (default: the swept one, else n)")
      ->type_name("m|n");
  add_output_flags(*predict, pf.output);

  return run_tool(app, argc, argv, [&] {
    if (predict->parsed()) return run_predict(pf);
    throw UsageError("give a subcommand: predict");
  });
}
