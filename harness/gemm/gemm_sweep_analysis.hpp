// What the GEMM sweep concludes from its measured rows: the model's
// prediction in TFLOPS beside each measurement, the points that lose more
// than 10%, and the nearest larger measured size that recovers the loss.
// Pure: it reads and extends rows, so it is tested without a GPU.
//
// Per curve (rows with the same dtype, layout and the same values of the
// dimensions not swept), the quantization-free level is the best measured
// TFLOPS among points the model says lose nothing (predicted efficiency of
// at least 0.99); where there are none, the best measured TFLOPS divided by
// its predicted efficiency. Then, per point:
//   predicted_tflops = level x predicted_efficiency
//   loss_pct         = 100 x (1 - tflops / level)
// and, where the row has tile_efficiency and wave_efficiency,
//   predicted_tflops_power_capped = level' x power_capped_efficiency
// with level' found the same way by the power-capped efficiency: the
// fixed-clock model with its one fitted parameter for a GPU at its power cap
// (kPowerCapWaveRecovery, harness/gpu/gemm_model.hpp), not a measurement.
// A point whose loss is above 10% is flagged, and the nearest larger size on
// the same curve within 10% of the level recovers it; its measured gain is
// its TFLOPS over the flagged point's.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "harness/report/report.hpp"

namespace redline {

struct QuantizationLoss {
  std::size_t row = 0;                        // index into the rows
  double loss = 0;                            // 1 - tflops / level
  std::optional<std::size_t> recovered_by;    // row index of the recovering size
  double measured_gain = 0;                   // recovering tflops / this tflops - 1
};

// Whether a row was measured: ok, with a finite tflops (a skipped dtype or a
// failed shape is not).
bool measured_gemm_row(const Row& row);

// The dimension a sweep varies: the one of m, n, k with the most distinct
// values among the rows (n on a tie, then m).
std::string swept_dimension(const std::vector<Row>& rows);

// Adds predicted_tflops, predicted_tflops_power_capped and loss_pct to the
// ok rows that have tflops (and the efficiencies the first two need);
// returns the flagged points in row order.
std::vector<QuantizationLoss> analyze_gemm_sweep(std::vector<Row>& rows, const std::string& swept_dim);

}  // namespace redline
