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
