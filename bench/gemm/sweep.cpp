// gemm_bench sweep: TFLOPS over any dimension beside the quantization
// model's prediction, the points losing more than 10% with the nearest
// larger size that recovers, and, sweeping M or N alone, the saturation: the
// tokens per micro-batch that fill the GPU.
#include <algorithm>
#include <string>
#include <vector>

#include "bench/gemm/gemm_rows.hpp"
#include "bench/gemm/session.hpp"
#include "bench/gemm/subcommands.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/units.hpp"
#include "harness/gemm/gemm_sweep_analysis.hpp"
#include "harness/gpu/gemm_model.hpp"
#include "harness/measure/saturation.hpp"

namespace redline::gemm {
namespace {

// Notes and summary lines for the points that lose more than 10% of the
// quantization-free level.
void add_quantization_losses(Report& report) {
  const std::string swept = swept_dimension(report.rows);
  const auto losses = analyze_gemm_sweep(report.rows, swept);
  for (const auto& loss : losses) {
    Row& row = report.rows[loss.row];
    std::string advice = "loses " + format_number(100 * loss.loss, 1) + "%";
    if (loss.recovered_by) {
      const Row& to = report.rows[*loss.recovered_by];
      advice += "; " + swept + " " + to.param_value(swept).value_or("?") + " recovers: +" +
                format_number(100 * loss.measured_gain, 1) + "% measured";
    } else {
      advice += "; no larger size in this sweep recovers it";
    }
    row.note = row.note.empty() ? advice : advice + "; " + row.note;
    report.summary.emplace_back(row.param_value("dtype").value_or("") + " " + shape_text(size_of(row)), advice);
  }
  // Out of the shapes measured: a dtype skipped here or a failed shape is none.
  const auto measured = std::count_if(report.rows.begin(), report.rows.end(), measured_gemm_row);
  report.summary.emplace_back("quantization", std::to_string(losses.size()) + " of " + std::to_string(measured) +
                                                  " measured shapes lose more than 10% of the quantization-free level");
}

// Tokens per micro-batch that fill the GPU: the harness's saturation point over the
// one swept dimension of C that carries the tokens, M or N (PyTorch's
// forward GEMM puts them in N; C is M x N, column-major).
void add_saturation(Session& s, const std::vector<std::int64_t>& ms, const std::vector<std::int64_t>& ns,
                    const std::vector<std::int64_t>& ks) {
  const bool only_m = ms.size() > 1 && ns.size() == 1, only_n = ns.size() > 1 && ms.size() == 1;
  if (!(only_m || only_n) || ks.size() != 1) return;
  for (GemmDtype dtype : s.dtypes) {
    std::vector<ThroughputPoint> points;
    for (const auto& row : s.report.rows)
      if (is_ok_gemm_row(row) && row.param_value("dtype") == gemm_dtype_info(dtype).name) {
        const GemmSize size = size_of(row);
        points.push_back({static_cast<double>(only_m ? size.m : size.n), *row.metric_value("tflops")});
      }
    const Saturation sat = analyze_saturation(points);
    if (!sat.fraction) continue;
    const std::string dim = only_m ? "M" : "N";
    const std::string fixed = only_m ? "N = " + std::to_string(ns.front()) : "M = " + std::to_string(ms.front());
    const std::string best = format_number(sat.best->throughput, 1) + " TFLOPS at " + dim + " = " +
                             format_number(sat.best->size, 0);
    const std::string reason = plateau_reason(sat, SaturationOptions{}, dim);
    const std::string text = sat.point ? dim + " = " + format_number(sat.point->size, 0) + " (" +
                                             format_number(sat.point->throughput, 1) + " TFLOPS): " + reason +
                                             "; best " + best
                                       : "not reached: " + reason + "; " + dim + " = " +
                                             format_number(sat.fraction->size, 0) +
                                             " reaches 90% of this shape's best (" + best + ")";
    s.report.summary.emplace_back(std::string("saturation ") + gemm_dtype_info(dtype).name,
                                  text + " (" + fixed + ", K = " + std::to_string(ks.front()) + ")");
  }
}

}  // namespace

int run_sweep(SweepFlags& f, const BenchmarkArgs& bench_args) {
  const auto ms = dim_axis("--m", f.m), ns = dim_axis("--n", f.n), ks = dim_axis("--k", f.k);
  const auto grid = checked_grid(f.m, f.n, f.k);
  const std::int64_t batch = parse_count_between("--batch", f.batch, 1, kMaxBatch);
  Session s = start_session(f.measure, bench_args, grid);
  for (GemmDtype dtype : s.dtypes) {
    if (interrupted()) break;
    append(s.report.rows, s.run(gemm_specs(grid, dtype, s.layout, batch)));
  }
  add_quantization_losses(s.report);
  s.report.summary.emplace_back("power cap", power_cap_model_summary());
  add_saturation(s, ms, ns, ks);
  return finish_session(s);
}

}  // namespace redline::gemm
