// gemm_bench peak: the maximum achievable matmul TFLOPS per dtype (best
// shape, % of the datasheet, clocks), plus the HBM copy and FP32 FMA
// ceilings. The quick search (harness/gemm/gemm_peak_search.hpp says why it
// finds the peak) aims at shapes the quantization model says lose nothing.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "bench/gemm/gemm_rows.hpp"
#include "bench/gemm/measure_settings.hpp"
#include "bench/gemm/session.hpp"
#include "bench/gemm/subcommands.hpp"
#include "harness/core/clock.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline::gemm {
namespace {

// How many of a search's best shapes are timed again under sustained load.
constexpr std::size_t kSustainedShapes = 3;

std::string clocks_text(const Row& row) {
  std::string text;
  if (const auto clock = row.metric_value("sm_clock_mhz_after")) text += format_number(*clock, 0) + " MHz";
  if (const auto power = row.metric_value("power_w_after"))
    text += std::string(text.empty() ? "" : ", ") + format_number(*power, 0) + " W";
  if (const auto temp = row.metric_value("temperature_c_after"))
    text += std::string(text.empty() ? "" : ", ") + format_number(*temp, 0) + " C";
  if (row.metric_value("throttled").value_or(0) > 0) text += ", throttled";
  return text.empty() ? "clocks unknown (no NVML)" : text;
}

// Coarse shapes, then wave-aligned ones around the best with its tile, then
// one step around the best.
std::vector<Row> quick_search(Session& s, GemmDtype dtype) {
  const int sms = s.runner->device().sm_count;
  std::vector<Row> rows = s.run(gemm_specs(coarse_peak_shapes(), dtype, s.layout));
  if (const Row* best = best_row(rows, dtype); best && !interrupted()) {
    const auto tile_m = best->metric_value("tile_m"), tile_n = best->metric_value("tile_n");
    if (tile_m && tile_n) {
      const TileShape tile{static_cast<std::int64_t>(*tile_m), static_cast<std::int64_t>(*tile_n)};
      append(rows, s.run(gemm_specs(unmeasured(wave_aligned_shapes(size_of(*best), tile, sms), sizes_of(rows)), dtype,
                                    s.layout)));
    }
  }
  if (const Row* best = best_row(rows, dtype); best && !interrupted())
    append(rows, s.run(gemm_specs(unmeasured(neighbour_shapes(size_of(*best)), sizes_of(rows)), dtype, s.layout)));
  return rows;
}

// The search's best shapes timed again over `seconds` of back-to-back GEMMs
// with no noise stop (rows with timing=sustained); none when seconds is 0.
// Why: a GPU at its power limit (an H100 or H200 running GEMMs) swings its
// SM clock between about 1200 and 1980 MHz, and a short sample can land on a
// burst. Seen on an H200 with ten 2 ms samples per shape: the same bf16
// shapes read 705 or 808 TFLOPS by the phase they were caught in. --min-time
// narrows that, but the best of 40 figures is still the luckiest one, not
// the achievable rate; a median over a second of load is what a training
// step gets.
std::vector<Row> sustained_rows(Session& s, const std::vector<Row>& rows, GemmDtype dtype, double seconds) {
  if (seconds <= 0 || interrupted()) return {};
  std::vector<const Row*> ok;
  for (const auto& row : rows)
    if (is_ok_gemm_row(row) && row.param_value("dtype") == gemm_dtype_info(dtype).name) ok.push_back(&row);
  std::sort(ok.begin(), ok.end(),
            [](const Row* a, const Row* b) { return *a->metric_value("tflops") > *b->metric_value("tflops"); });
  std::vector<GemmCaseSpec> specs;
  for (const Row* row : ok) {
    const GemmSize size = size_of(*row);
    if (std::any_of(specs.begin(), specs.end(), [&](const GemmCaseSpec& c) { return c.size == size; })) continue;
    specs.push_back({size, dtype, s.layout, 1, {{"timing", "sustained"}}});
    if (specs.size() == kSustainedShapes) break;
  }
  MeasurementPolicy sustained = s.policy;
  sustained.target_cv = 0;
  sustained.max_seconds = seconds;
  sustained.max_repetitions = 1000000;  // the time decides
  return s.run(specs, sustained);
}

// The MAMF row of one search, under a fixed key (`result`) so nightly runs
// compare it even when the best shape moves, and its summary line. The
// figure is the best sustained row's when there are any (see
// sustained_rows), else the search's best.
std::optional<Row> mamf_row(Session& s, const std::vector<Row>& search, const std::vector<Row>& sustained,
                            GemmDtype dtype, const std::string& result, const std::string& summary_key,
                            double sustain_seconds) {
  const Row* search_best = best_row(search, dtype);
  const Row* sustained_best = best_row(sustained, dtype);
  const Row* best = sustained_best ? sustained_best : search_best;
  if (!best) {
    s.report.summary.emplace_back(summary_key, "no shape ran ok (see the rows' notes)");
    return std::nullopt;
  }
  Row mamf;
  mamf.param("dtype", gemm_dtype_info(dtype).name).param("layout", gemm_layout_name(s.layout)).param("result", result);
  for (const char* metric : {"tflops", "datasheet_pct", "time_us", "sm_clock_mhz_after", "power_w_after"})
    if (const auto v = best->metric_value(metric)) mamf.metric(metric, *v);
  std::string how;
  if (sustained_best) {
    how = "; sustained " + format_number(sustain_seconds, 2) + " s";
    const double burst = *search_best->metric_value("tflops"), held = *sustained_best->metric_value("tflops");
    if (burst > 1.02 * held)
      how += "; the search's short samples reached " + format_number(burst, 1) + " at " +
             shape_text(size_of(*search_best)) + " (a clock burst, not held)";
  }
  mamf.note = "best of " + std::to_string(search.size()) + " shapes: " + shape_text(size_of(*best)) + how;
  const auto pct = best->metric_value("datasheet_pct");
  s.report.summary.emplace_back(summary_key, format_number(*best->metric_value("tflops"), 1) + " TFLOPS at " +
                                                 shape_text(size_of(*best)) +
                                                 (pct ? " (" + format_number(*pct, 1) + "% of the datasheet)" : std::string()) +
                                                 "; " + clocks_text(*best) + how);
  return mamf;
}

// One search (quick or exhaustive) of one dtype: its rows, its sustained
// re-timing, its MAMF row.
void search_peak(Session& s, GemmDtype dtype, const std::string& search, const std::vector<GemmSize>& grid,
                 double sustain) {
  const std::string name = gemm_dtype_info(dtype).name;
  std::vector<Row> rows = search == "exhaustive" ? s.run(gemm_specs(grid, dtype, s.layout)) : quick_search(s, dtype);
  std::vector<Row> held = sustained_rows(s, rows, dtype, sustain);
  std::optional<Row> mamf = mamf_row(s, rows, held, dtype, "mamf", "mamf " + name, sustain);
  append(s.report.rows, std::move(rows));
  append(s.report.rows, std::move(held));
  if (mamf) s.report.rows.push_back(std::move(*mamf));
}

// --search check: the quick search, then the exhaustive grid, in one run, so
// the claim "within 2% of the exhaustive best in a fraction of its time" is
// measured here, on this GPU. Each side's time includes its sustained
// re-timing, and each side's best is its sustained best (the figure its MAMF
// row reports).
void check_search(Session& s, GemmDtype dtype, const std::vector<GemmSize>& grid, double sustain) {
  const std::string name = gemm_dtype_info(dtype).name;
  double t0 = steady_seconds();
  std::vector<Row> quick = quick_search(s, dtype);
  std::vector<Row> quick_held = sustained_rows(s, quick, dtype, sustain);
  const double quick_s = steady_seconds() - t0;
  t0 = steady_seconds();
  std::vector<Row> full = s.run(gemm_specs(grid, dtype, s.layout));
  std::vector<Row> full_held = sustained_rows(s, full, dtype, sustain);
  const double full_s = steady_seconds() - t0;
  const Row* quick_best = best_row(quick_held.empty() ? quick : quick_held, dtype);
  const Row* full_best = best_row(full_held.empty() ? full : full_held, dtype);
  if (quick_best && full_best) {
    const double ratio = *quick_best->metric_value("tflops") / *full_best->metric_value("tflops");
    s.report.summary.emplace_back(
        "search check " + name,
        "quick " + format_number(*quick_best->metric_value("tflops"), 1) + " TFLOPS (" + std::to_string(quick.size()) +
            " shapes, " + format_number(quick_s, 1) + " s) vs exhaustive " +
            format_number(*full_best->metric_value("tflops"), 1) + " (" + std::to_string(full.size()) + " shapes, " +
            format_number(full_s, 1) + " s): " + format_number(100 * ratio, 1) + "% of the exhaustive best in " +
            format_number(100 * quick_s / full_s, 1) + "% of its time (target: at least 98%)");
  }
  std::optional<Row> quick_mamf = mamf_row(s, quick, quick_held, dtype, "mamf", "mamf " + name + " (quick)", sustain);
  std::optional<Row> full_mamf =
      mamf_row(s, full, full_held, dtype, "mamf_exhaustive", "mamf " + name + " (exhaustive)", sustain);
  for (auto* part : {&quick, &quick_held, &full, &full_held}) {
    for (Row row : *part) {
      // The same shape may be in both searches.
      row.param("search", part == &quick || part == &quick_held ? "quick" : "exhaustive");
      s.report.rows.push_back(std::move(row));
    }
  }
  for (auto* mamf : {&quick_mamf, &full_mamf})
    if (*mamf) s.report.rows.push_back(std::move(**mamf));
}

// The HBM copy and FP32 FMA ceilings: their rows and summary lines.
void add_roofline(Session& s) {
  auto roofline = s.run_roofline();
  for (const auto& row : roofline) {
    const std::string kernel = row.param_value("kernel").value_or("?");
    const auto pct = row.metric_value("datasheet_pct");
    const auto value = row.metric_value(kernel == "copy" ? "hbm_GBps" : "tflops");
    if (row.status == RowStatus::ok && value)
      s.report.summary.emplace_back(kernel == "copy" ? "hbm ceiling" : "fp32 fma ceiling",
                                    format_number(*value, 1) + (kernel == "copy" ? " GB/s" : " TFLOPS") +
                                        (pct ? " (" + format_number(*pct, 1) + "% of the datasheet)" : std::string()));
  }
  append(s.report.rows, std::move(roofline));
}

}  // namespace

int run_peak(PeakFlags& f, const BenchmarkArgs& bench_args) {
  if (f.search != "quick" && f.search != "exhaustive" && f.search != "check")
    throw UsageError("--search", f.search, "must be quick, exhaustive or check");
  const double sustain = positive_seconds("--sustain", f.sustain);
  // Checked whatever the search, so a bad value is refused before anything runs.
  const std::vector<GemmSize> grid = checked_grid(f.m, f.n, f.k);
  if (f.search == "quick" && !f.grid_flag.empty())
    throw UsageError(f.grid_flag, f.grid_flag == "--m" ? f.m : f.grid_flag == "--n" ? f.n : f.k,
                     "is for --search exhaustive or check; the quick search (the default) picks its own shapes");
  Session s = start_session(f.measure, bench_args, f.search == "quick" ? coarse_peak_shapes() : grid);
  for (GemmDtype dtype : s.dtypes) {
    if (interrupted()) break;
    if (f.search == "check")
      check_search(s, dtype, grid, sustain);
    else
      search_peak(s, dtype, f.search, grid, sustain);
  }
  if (!f.no_roofline && !interrupted()) add_roofline(s);
  return finish_session(s);
}

}  // namespace redline::gemm
