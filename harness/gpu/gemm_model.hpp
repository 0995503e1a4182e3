// The tile and wave quantization model of a GEMM C[M,N] = A[M,K] B[K,N]: how
// much of a GPU's matmul throughput a shape can use, given the tile of C one
// CTA computes and how many CTAs the GPU runs at once. Also the padding
// advice it implies, and the tile shapes cuBLASLt reports (tile ids, kernel
// names). Pure arithmetic: no CUDA headers, so it runs anywhere.
//
// The model (NVIDIA's "Matrix Multiplication Background" guide, made exact):
//   * A library kernel splits C into tiles of tm x tn; one CTA computes one
//     tile over all of K (or 1/split_k of K). A partial tile at the edge of M
//     or N costs as much as a full one: tile quantization. Its efficiency is
//     the useful fraction of the computed area,
//       tile_efficiency = M*N / (ceil(M/tm)*tm * ceil(N/tn)*tn).
//   * tiles = ceil(M/tm) * ceil(N/tn) * split_k CTAs run on SMs * ctas_per_sm
//     slots at a time. Every wave takes as long as a full one (same tile, same
//     K), so a last wave that fills few slots costs a full wave: wave
//     quantization. waves = tiles / slots (fractional), launch_waves =
//     ceil(waves) (the waves the launch runs, a part-empty last one
//     included), full_waves = floor(waves) (those with every slot busy),
//     wave_efficiency = tiles / (launch_waves * slots).
//   * predicted_efficiency = tile_efficiency * wave_efficiency: the predicted
//     throughput relative to the same kernel on a shape with no quantization
//     loss, at a fixed clock. Predicted time is proportional to launch_waves
//     (for a fixed tile and K), so two shapes with the same launch_waves are
//     predicted to take the same time.
//   * At a power cap the clock is not fixed: power_capped_efficiency() is the
//     same model with one fitted parameter for the clock's rise when a last
//     wave is part empty (see kPowerCapWaveRecovery below).
// What it leaves out, so a measurement can differ: the library picking
// another tile or split-K for a neighbouring shape, memory-bound small shapes,
// misaligned leading dimensions (not a multiple of 16 bytes) taking slower
// kernels, persistent/stream-K kernels that balance the last wave, and K not
// being a multiple of the tile's K depth.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redline {

struct TileShape {
  std::int64_t rows = 0;  // of C, along M
  std::int64_t cols = 0;  // of C, along N
  bool operator==(const TileShape&) const = default;
};

struct GemmProblem {
  std::int64_t m = 0, n = 0, k = 0;
  TileShape tile;
  int sm_count = 0;
  int ctas_per_sm = 1;
  int split_k = 1;
  // Independent GEMMs of the same shape in one launch (a strided batch):
  // their tiles fill the waves together, as split-K's do.
  std::int64_t batch = 1;
};

struct GemmPrediction {
  std::int64_t tiles_m = 0, tiles_n = 0;
  std::int64_t tiles = 0;         // tiles_m * tiles_n * split_k * batch: CTAs launched
  std::int64_t slots = 0;         // sm_count * ctas_per_sm: CTAs resident at once
  double waves = 0;               // tiles / slots
  std::int64_t launch_waves = 0;  // ceil(waves): what the fixed-clock time is proportional to
  std::int64_t full_waves = 0;    // floor(waves): waves with every slot busy ("1 full wave and 9 tiles" is 1)
  double tile_efficiency = 0;
  double wave_efficiency = 0;
  double predicted_efficiency = 0;  // tile * wave: relative throughput at a fixed clock
};

// Throws std::invalid_argument when a dimension, the tile, the SM count,
// ctas_per_sm, split_k or batch is below 1.
GemmPrediction predict_gemm(const GemmProblem& problem);

// ---- At a power cap (fitted) ----
// A GPU held at its power cap (an H100 or H200 running large GEMMs) limits
// its average power over a window longer than one GEMM, so a part-empty last
// wave, which draws less, lets the clock rise and the GEMM takes less than
// launch_waves full waves. A GEMM's time there lies between two bounds: the
// slot-bound time of the fixed-clock model (launch_waves) and the
// energy-bound time of a GPU whose power alone sets the pace (waves, the
// fractional count: energy goes with the tiles computed). The one parameter
// r is the share of the energy-bound time in the blend:
//   time ~ (1 - r) * launch_waves + r * waves, so
//   power_capped_wave_efficiency = waves / that = we / ((1 - r) + r * we),
// r = 0 the fixed-clock model, r = 1 no wave quantization at all. It is
// partial because idle SMs still draw power and the clock has a ceiling.
// Equivalently: the last wave's idle share costs (1 - r) of its time.
//
// Fitted, not derived: r = 0.566 by least squares on the per-point relative
// TFLOPS (the overall scale fitted by matching the sweep's means;
// harness/gemm/gemm_power_cap_fit) of one H200 bf16 sweep at its power cap, M 8192, K 4096, N 3840..5120 step 64, 21 points
// (results/references/H200/gemm_sweep.csv, transcribed from
// docs/validation.md, 2026-11-22), rounded to 0.57. Fitted on alternate
// points it is 0.49 / 0.67, on either half of N 0.45 / 0.81: the data fix
// it to about +-0.2. It leaves the per-point RMS error at 1.6%, worst 4.8%
// (fixed clock: 2.1%, 5.8%); on held-back points, fitted on the other half,
// 1.2-2.0% (fixed clock 1.7-2.4%) (docs/validation.md, 2026-12-01). The
// 1 - c * (1 - we) form fits as well (RMS 1.6%); this one was kept because
// its parameter and its limits mean something.
// Apply it only to a GPU at its power cap, and only as what it is: one sweep
// on one GPU model. predict_gemm's predicted_efficiency stays the
// fixed-clock model (the attention model uses that).
inline constexpr double kPowerCapWaveRecovery = 0.57;

// wave_efficiency / ((1 - r) + r * wave_efficiency); throws
// std::invalid_argument unless 0 < wave_efficiency <= 1 and 0 <= r <= 1.
double power_capped_wave_efficiency(double wave_efficiency, double recovery = kPowerCapWaveRecovery);
// tile_efficiency * power_capped_wave_efficiency(wave_efficiency).
double power_capped_efficiency(const GemmPrediction& prediction, double recovery = kPowerCapWaveRecovery);
// What a tool's *_power_capped columns are, for its summary: the fitted
// parameter, its data, and that it is for a GPU at its power cap only.
std::string power_cap_model_summary();

enum class GemmDim { m, n };

struct PaddingAdvice {
  GemmDim dim = GemmDim::n;
  std::int64_t from = 0, to = 0;
  GemmPrediction before, after;
  double gain = 0;  // after.predicted_efficiency / before - 1
};

// A shape loses to quantization when its predicted efficiency is below this.
inline constexpr double kQuantizationLossThreshold = 0.90;
// A padded size recovers the loss when its predicted efficiency reaches this
// (it loses less than 5%): half the loss that flags a shape, so advice never
// names a size that is itself nearly flagged.
inline constexpr double kRecoveredEfficiency = 0.95;
// How far above a size the padding advice looks: up to twice it.
inline constexpr double kPaddingMaxGrowth = 1.0;

// The nearest size above problem.<dim> that recovers the loss: the smallest
// multiple of the tile along `dim` whose predicted efficiency is within
// `tolerance` of the best one found up to `max_growth` above the current size
// (so that advice pads a shape rather than changes the model). Only tile
// multiples are candidates: inside one tile count, a larger size costs the
// same time, so the multiple is the size that gets the most for it. Returns
// nullopt when the current size is already within `tolerance` of that best.
// K is not a choice: it does not change the tile count.
std::optional<PaddingAdvice> nearest_recovering_size(const GemmProblem& problem, GemmDim dim,
                                                     double tolerance = 0.01, double max_growth = 0.25);

// The smallest multiple of the tile along `dim`, above problem.<dim> and at
// most (1 + max_growth) times it, whose predicted efficiency reaches
// `recovered`: the advice for a flagged shape. Unlike
// nearest_recovering_size it does not stop at the best of a short range, so
// it never names a size that still loses much (2304 x 1664 on an A100 in
// 256x128 tiles: n 2048 still loses 33%; 3072 loses nothing). nullopt when
// no size in the range recovers.
// The largest size padding advice considers along `dim`: (1 + max_growth)
// times the current size, or the first tile multiple above it where that is
// larger (100 in 256-wide tiles: 256, not 200).
std::int64_t padding_search_limit(const GemmProblem& problem, GemmDim dim, double max_growth = kPaddingMaxGrowth);

std::optional<PaddingAdvice> first_recovering_size(const GemmProblem& problem, GemmDim dim,
                                                   double recovered = kRecoveredEfficiency,
                                                   double max_growth = kPaddingMaxGrowth);

// A tile edge or kernel-name number larger than this is not a tile.
inline constexpr std::int64_t kMaxTileEdge = 1 << 16;
// "128x256" -> {128, 256}; nullopt unless two integers from 1 to
// kMaxTileEdge joined by x.
std::optional<TileShape> parse_tile(std::string_view text);
std::string tile_text(const TileShape& tile);

// cublasLtMatmulTile_t value (CUBLASLT_ALGO_CONFIG_TILE_ID) -> rows x cols of
// C. nullopt for CUBLASLT_MATMUL_TILE_UNDEFINED and values the table lacks.
std::optional<TileShape> tile_from_cublaslt_id(int tile_id);
// The largest tile id the table knows (CUBLASLT_MATMUL_TILE_END - 1 of the
// header it was written from).
int max_known_cublaslt_tile_id();

// The C tile a launched kernel's name states (CUPTI gives the names):
//   cuBLAS xmma   "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_..."
//   CUTLASS 3.x   "cutlass3x_sm90_tensorop_gemm_bf16_..._128x256x64_1x2x1_0_tnn_..."
//   CUTLASS 2.x / cuBLAS ampere  "..._s16816gemm_bf16_256x128_32x3_nn_align8"
// nullopt when the name states no tile.
std::optional<TileShape> tile_from_kernel_name(std::string_view kernel_name);

}  // namespace redline
