// Fitting the quantization model's power-cap parameter (kPowerCapWaveRecovery,
// harness/gpu/gemm_model.hpp) to a measured sweep, and the per-point error
// that judges it. Pure: the reference sweep's CSV is read by load_results, so
// the fit and its check run in CI without a GPU.
//
// The per-point error compares shapes, not absolute rates (the ceiling a
// shape would reach without quantization is unknown): the prediction over
// the sweep's mean prediction against the measured TFLOPS over their mean,
//   error_i = (predicted_i / mean(predicted)) / (tflops_i / mean(tflops)) - 1,
// so the overall scale is fitted by matching the means. The fit is least
// squares of those errors over the recovery r in [0, 1] (a 0.001 grid: one
// parameter, and a grid cannot stop in a local minimum).
#pragma once

#include <vector>

#include "harness/report/run_results.hpp"

namespace redline {

struct SweepPoint {
  double tile_efficiency = 0, wave_efficiency = 0;  // the fixed-clock model's, from the shape and tile
  double tflops = 0;                                // measured
};

// The measured points of `rows` (status ok, tflops, tile_m and tile_n, m, n
// and k; split_k and batch where given, else 1) with the model's
// efficiencies on `sm_count` SMs, in row order. Throws std::invalid_argument
// for a row whose shape or tile the model refuses.
std::vector<SweepPoint> sweep_points(const std::vector<ResultRow>& rows, int sm_count);

// The model's efficiency for each point at recovery r (0: the fixed clock).
std::vector<double> power_capped_predictions(const std::vector<SweepPoint>& points, double recovery);

// error_i above, per point; empty for no points.
std::vector<double> relative_errors(const std::vector<SweepPoint>& points, double recovery);

double rms(const std::vector<double>& values);      // 0 for none
double max_abs(const std::vector<double>& values);  // 0 for none

struct PowerCapFit {
  double recovery = 0;         // the least-squares r
  std::vector<double> errors;  // relative_errors at it
};

// Throws std::invalid_argument for fewer than 2 points (no shape to fit).
PowerCapFit fit_power_cap_recovery(const std::vector<SweepPoint>& points);

}  // namespace redline
