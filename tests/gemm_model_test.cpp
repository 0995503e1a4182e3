// The GEMM quantization model against hand-computed cases, the padding
// advice, the power-cap parameter against the H200 reference sweep
// (results/references/H200/gemm_sweep.csv), cuBLASLt tile ids and kernel
// names, the datasheet table, and gemm_bench predict end to end (the real
// binary, GEMM_BENCH_BIN).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/core/child_process.hpp"
#include "harness/gemm/gemm_power_cap_fit.hpp"
#include "harness/gpu/gemm_model.hpp"
#include "harness/gpu/gpu_peaks.hpp"
#include "harness/report/csv_reader.hpp"
#include "harness/report/run_results.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using namespace redline;

namespace {

GemmProblem problem(std::int64_t m, std::int64_t n, std::int64_t k, TileShape tile, int sms) {
  GemmProblem p;
  p.m = m, p.n = n, p.k = k, p.tile = tile, p.sm_count = sms;
  return p;
}

TEST(GemmModel, SquareShapeOnH100LosesOnlyTheLastWave) {
  const auto r = predict_gemm(problem(4096, 4096, 4096, {128, 256}, 132));
  EXPECT_EQ(r.tiles_m, 32);
  EXPECT_EQ(r.tiles_n, 16);
  EXPECT_EQ(r.tiles, 512);
  EXPECT_EQ(r.slots, 132);
  EXPECT_NEAR(r.waves, 512.0 / 132, 1e-12);  // 3.88
  EXPECT_EQ(r.launch_waves, 4);
  EXPECT_EQ(r.full_waves, 3);  // the fourth holds 116 tiles
  EXPECT_DOUBLE_EQ(r.tile_efficiency, 1.0);
  EXPECT_NEAR(r.wave_efficiency, 512.0 / 528, 1e-12);  // 0.9697
  EXPECT_NEAR(r.predicted_efficiency, 0.969697, 1e-6);
}

TEST(GemmModel, OneRowPastTheTileAddsATileRow) {
  // 33 tile rows: the last holds 1 of 128 rows. 528 tiles fill 4 waves exactly.
  const auto r = predict_gemm(problem(4097, 4096, 4096, {128, 256}, 132));
  EXPECT_EQ(r.tiles, 33 * 16);
  EXPECT_NEAR(r.tile_efficiency, 4097.0 / 4224, 1e-12);
  EXPECT_DOUBLE_EQ(r.wave_efficiency, 1.0);
  EXPECT_NEAR(r.predicted_efficiency, 4097.0 / 4224, 1e-12);
}

TEST(GemmModel, SplitKAndCtasPerSmChangeTheWaves) {
  auto p = problem(4096, 4096, 4096, {128, 256}, 132);
  p.split_k = 2;
  auto r = predict_gemm(p);
  EXPECT_EQ(r.tiles, 1024);
  EXPECT_EQ(r.launch_waves, 8);
  EXPECT_EQ(r.full_waves, 7);
  EXPECT_NEAR(r.wave_efficiency, 1024.0 / 1056, 1e-12);
  p.split_k = 1;
  p.ctas_per_sm = 2;
  r = predict_gemm(p);
  EXPECT_EQ(r.slots, 264);
  EXPECT_EQ(r.launch_waves, 2);
  EXPECT_EQ(r.full_waves, 1);
  EXPECT_NEAR(r.wave_efficiency, 512.0 / 528, 1e-12);
}

TEST(GemmModel, BatchesFillTheWavesTogether) {
  // 4 batches of a 512 x 1024 C in 128 x 256 tiles: 16 tiles each, 64 CTAs
  // in one wave of 132 slots; each batch's tiles are full.
  auto p = problem(512, 1024, 128, {128, 256}, 132);
  p.batch = 4;
  auto r = predict_gemm(p);
  EXPECT_EQ(r.tiles, 64);
  EXPECT_EQ(r.launch_waves, 1);
  EXPECT_EQ(r.full_waves, 0);  // not one wave is full
  EXPECT_DOUBLE_EQ(r.tile_efficiency, 1.0);
  EXPECT_NEAR(r.wave_efficiency, 64.0 / 132, 1e-12);
  // 9 batches: 144 tiles, a second wave holding 12.
  p.batch = 9;
  r = predict_gemm(p);
  EXPECT_EQ(r.tiles, 144);
  EXPECT_EQ(r.launch_waves, 2);
  EXPECT_EQ(r.full_waves, 1);
  EXPECT_NEAR(r.wave_efficiency, 144.0 / 264, 1e-12);
  p.batch = 0;
  EXPECT_THROW(predict_gemm(p), std::invalid_argument);
}

TEST(GemmModel, FullWavesCountOnlyFullWaves) {
  // 141 tiles on 132 SMs: one full wave and 9 tiles. full_waves is 1, the
  // launch runs 2 waves, and the time (fixed clock) is that of 2.
  const auto r = predict_gemm(problem(128 * 141, 256, 64, {128, 256}, 132));
  EXPECT_EQ(r.tiles, 141);
  EXPECT_EQ(r.full_waves, 1);
  EXPECT_EQ(r.launch_waves, 2);
  EXPECT_NEAR(r.wave_efficiency, 141.0 / 264, 1e-12);
  // Exactly full: both counts agree.
  const auto exact = predict_gemm(problem(128 * 132, 256, 64, {128, 256}, 132));
  EXPECT_EQ(exact.full_waves, 1);
  EXPECT_EQ(exact.launch_waves, 1);
}

TEST(GemmModel, RejectsEmptyShapes) {
  EXPECT_THROW(predict_gemm(problem(0, 1, 1, {128, 128}, 132)), std::invalid_argument);
  EXPECT_THROW(predict_gemm(problem(1, 1, 1, {0, 128}, 132)), std::invalid_argument);
  EXPECT_THROW(predict_gemm(problem(1, 1, 1, {128, 128}, 0)), std::invalid_argument);
}

TEST(GemmModel, NSweepShowsTheSawtooth) {
  // Efficiency climbs to each multiple of the tile, then falls just past it.
  double previous = 0;
  for (std::int64_t n = 3968; n <= 4352; n += 32) {
    const double e = predict_gemm(problem(4096, n, 4096, {128, 256}, 132)).predicted_efficiency;
    if (n == 4128) {
      EXPECT_LT(e, previous - 0.15) << "the drop past 4096";
      EXPECT_LT(e, kQuantizationLossThreshold);
    } else if (n > 3968) {
      EXPECT_GT(e, previous) << "n=" << n;
    }
    previous = e;
  }
}

TEST(GemmModel, PaddingAdviceNamesTheNearestRecoveringSize) {
  const auto p = problem(4096, 4128, 4096, {128, 256}, 132);
  const auto advice = nearest_recovering_size(p, GemmDim::n);
  ASSERT_TRUE(advice);
  EXPECT_EQ(advice->from, 4128);
  EXPECT_EQ(advice->to, 5120);  // 20 tile columns: 640 tiles of 660 slots
  EXPECT_EQ(advice->after.launch_waves, advice->before.launch_waves);
  EXPECT_NEAR(advice->after.predicted_efficiency, 640.0 / 660, 1e-12);
  EXPECT_NEAR(advice->gain, advice->after.predicted_efficiency / advice->before.predicted_efficiency - 1, 1e-12);
  // A shape that loses little needs no advice.
  EXPECT_FALSE(nearest_recovering_size(problem(4096, 4096, 4096, {128, 128}, 128), GemmDim::n));
}

TEST(GemmModel, VocabPadsToTheTileMultiple) {
  // The logits GEMM as PyTorch hands it to cuBLAS: M = vocab, N = tokens.
  // 16896 tokens = 132 tile columns, so every tile count fills whole waves
  // and only the vocab's tile quantization is left: 50257 -> 393 x 128 = 50304.
  const auto p = problem(50257, 16896, 4096, {128, 128}, 132);
  const auto exact = nearest_recovering_size(p, GemmDim::m, /*tolerance=*/0.0);
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->to, 50304);
  EXPECT_NEAR(exact->gain, 50304.0 / 50257 - 1, 1e-9);
  // The model calls that loss (0.09%) negligible at the default 1% tolerance:
  // padding 50257 pays through alignment, which the model does not cover.
  EXPECT_FALSE(nearest_recovering_size(p, GemmDim::m));
  // The tokens are a choice too: 4097 of them pad to the next tile column.
  const auto columns = nearest_recovering_size(problem(4096, 4097, 4096, {128, 256}, 132), GemmDim::n, 0.0, 0.1);
  ASSERT_TRUE(columns);
  EXPECT_EQ(columns->to % 256, 0);
}

TEST(GemmModel, PaddingAdviceSearchesUntilASizeRecovers) {
  // 2304 x 1664 on an A100 (108 SMs) in 256x128 tiles: 9 x 13 = 117 tiles,
  // one full wave and 9 tiles, 0.54. Within 25% the best is n 2048, which
  // still loses a third; the advice looks on until a size loses under 5%.
  const auto p = problem(2304, 1664, 4096, {256, 128}, 108);
  const auto near = nearest_recovering_size(p, GemmDim::n);
  ASSERT_TRUE(near);
  EXPECT_EQ(near->to, 2048);
  EXPECT_LT(near->after.predicted_efficiency, 0.7);
  const auto advice = first_recovering_size(p, GemmDim::n);
  ASSERT_TRUE(advice);
  EXPECT_EQ(advice->to, 2944);  // 23 tile columns: 207 tiles of 216 slots
  EXPECT_NEAR(advice->after.predicted_efficiency, 207.0 / 216, 1e-12);
  EXPECT_GE(advice->after.predicted_efficiency, kRecoveredEfficiency);
  EXPECT_EQ(advice->after.launch_waves, advice->before.launch_waves);
  // The first such size: every tile multiple below it still loses 5% or more.
  for (std::int64_t n = 1792; n < advice->to; n += 128)
    EXPECT_LT(predict_gemm(problem(2304, n, 4096, {256, 128}, 108)).predicted_efficiency, kRecoveredEfficiency) << n;
}

TEST(GemmModel, PaddingAdviceStopsAtTwiceTheSize) {
  // One 256x128 tile on 108 SMs: no N up to 2x fills a wave.
  EXPECT_FALSE(first_recovering_size(problem(256, 128, 64, {256, 128}, 108), GemmDim::n));
  // The limit holds: 2304 x 1664 on an A100 recovers at n 2944, 1.77x.
  const auto a100 = problem(2304, 1664, 4096, {256, 128}, 108);
  EXPECT_FALSE(first_recovering_size(a100, GemmDim::n, kRecoveredEfficiency, 0.75));  // up to 2912
  EXPECT_EQ(first_recovering_size(a100, GemmDim::n, kRecoveredEfficiency, 0.77)->to, 2944);
}

TEST(GemmModel, PowerCappedEfficiencyBlendsSlotAndEnergyBoundTime) {
  // N 4800 of the H200 sweep: 192x192 tiles, 43 x 25 = 1075 tiles on 132 SMs,
  // 8.14 waves run as 9.
  const auto r = predict_gemm(problem(8192, 4800, 4096, {192, 192}, 132));
  EXPECT_EQ(r.tiles, 1075);
  const double wave = 1075.0 / (9 * 132);
  EXPECT_NEAR(r.wave_efficiency, wave, 1e-12);
  // time ~ (1 - r) x 9 + r x 8.144 waves
  const double waves = 1075.0 / 132;
  EXPECT_NEAR(power_capped_wave_efficiency(wave, 0.57), waves / (0.43 * 9 + 0.57 * waves), 1e-12);
  EXPECT_NEAR(power_capped_efficiency(r), r.tile_efficiency * power_capped_wave_efficiency(wave), 1e-12);
  // The limits: r = 0 is the fixed clock, r = 1 no wave quantization.
  EXPECT_NEAR(power_capped_efficiency(r, 0.0), r.predicted_efficiency, 1e-12);
  EXPECT_NEAR(power_capped_efficiency(r, 1.0), r.tile_efficiency, 1e-12);
  EXPECT_DOUBLE_EQ(power_capped_wave_efficiency(1.0), 1.0);
  EXPECT_THROW(power_capped_wave_efficiency(0.0), std::invalid_argument);
  EXPECT_THROW(power_capped_wave_efficiency(1.5), std::invalid_argument);
  EXPECT_THROW(power_capped_wave_efficiency(0.5, -0.1), std::invalid_argument);
  EXPECT_THROW(power_capped_wave_efficiency(0.5, 1.1), std::invalid_argument);
  // predict_gemm itself stays the fixed-clock model (attention_bench's model
  // reads predicted_efficiency).
  EXPECT_NEAR(r.predicted_efficiency, r.tile_efficiency * wave, 1e-12);
  EXPECT_EQ(power_cap_model_summary().find("r = 0.57") != std::string::npos, true);
}

// ---- The power-cap parameter against the H200 reference sweep ----

// The repository, for its reference results: SOURCE_DIR where the build
// defines it, else two folders above this file (CMake compiles it by its
// absolute path).
fs::path source_dir() {
#if defined(SOURCE_DIR)
  return SOURCE_DIR;
#else
  return fs::path(__FILE__).parent_path().parent_path();
#endif
}

class H200ReferenceSweep : public ::testing::Test {
 protected:
  void SetUp() override {
    results_ = load_results(source_dir() / "results" / "references" / "H200" / "gemm_sweep.csv");
    const auto h200 = lookup_gpu_peaks("NVIDIA H200");
    ASSERT_TRUE(h200);
    points_ = sweep_points(results_.rows, h200->sm_count);
  }

  // Every other point by N (the file is in N order), from `first`.
  std::vector<SweepPoint> alternate(std::size_t first) const {
    std::vector<SweepPoint> picked;
    for (std::size_t i = first; i < points_.size(); i += 2) picked.push_back(points_[i]);
    return picked;
  }

  RunResults results_;
  std::vector<SweepPoint> points_;
};

TEST_F(H200ReferenceSweep, ReadsBackAsTheToolWroteIt) {
  ASSERT_EQ(results_.rows.size(), 21u);
  ASSERT_EQ(points_.size(), 21u);
  for (const ResultRow& row : results_.rows) {
    SCOPED_TRACE(row.case_key);
    EXPECT_EQ(row.run_id, "transcribed-20261122");
    EXPECT_EQ(row.gpu, "NVIDIA H200");
    EXPECT_EQ(row.tool, "gemm_bench");
    EXPECT_EQ(row.status, RowStatus::ok);
    EXPECT_CONTAINS(row.note, "transcribed from docs/validation.md");
    EXPECT_EQ(row.params.at("dtype"), "bf16");
    EXPECT_EQ(row.params.at("m"), "8192");
    EXPECT_EQ(row.params.at("k"), "4096");
    // What the table did not record stays empty: no time, clock or power.
    for (const char* absent : {"time_us", "sm_clock_mhz_min", "power_w_after", "split_k", "loss_pct"})
      EXPECT_FALSE(row.metrics.count(absent)) << absent;
    // The transcribed model columns are the model's, to the table's 3 decimals.
    const TileShape tile{static_cast<std::int64_t>(row.metrics.at("tile_m")),
                         static_cast<std::int64_t>(row.metrics.at("tile_n"))};
    const GemmPrediction r = predict_gemm(problem(8192, std::stoll(row.params.at("n")), 4096, tile, 132));
    EXPECT_EQ(row.metrics.at("tiles"), static_cast<double>(r.tiles));
    EXPECT_NEAR(row.metrics.at("waves"), r.waves, 5e-4);
    EXPECT_NEAR(row.metrics.at("tile_efficiency"), r.tile_efficiency, 5e-4);
    EXPECT_NEAR(row.metrics.at("wave_efficiency"), r.wave_efficiency, 5e-4);
    EXPECT_NEAR(row.metrics.at("predicted_efficiency"), r.predicted_efficiency, 1e-3);
  }
}

// The constant in the model is what this sweep gives (least squares, the
// scale fitted by the means): 0.566, kept as 0.57.
TEST_F(H200ReferenceSweep, TheModelsRecoveryIsTheFit) {
  const PowerCapFit fit = fit_power_cap_recovery(points_);
  EXPECT_NEAR(fit.recovery, 0.566, 0.0015);
  EXPECT_NEAR(kPowerCapWaveRecovery, fit.recovery, 0.01);
  EXPECT_THROW(fit_power_cap_recovery({points_.front()}), std::invalid_argument);
}

// Per point, (predicted / its mean) against (measured / its mean): the fitted
// model's error bound over the 21 points, and the fixed clock's, worse.
// Achieved: RMS 1.58%, worst 4.84% (N 4480, which measured 3-6% below its
// neighbours though no model here predicts a loss); fixed clock RMS 2.14%,
// worst 5.75%.
TEST_F(H200ReferenceSweep, PerPointErrorBound) {
  const std::vector<double> fitted = relative_errors(points_, kPowerCapWaveRecovery);
  const std::vector<double> fixed = relative_errors(points_, 0.0);
  EXPECT_LE(rms(fitted), 0.0165);
  EXPECT_LE(max_abs(fitted), 0.050);
  EXPECT_GE(rms(fixed), 0.020);
  EXPECT_LT(rms(fitted), rms(fixed) - 0.004);
}

// Fitted on half the points, the model predicts the other half better than
// the fixed clock does: alternate points both ways, and each half of N (the
// lower 11, N 3840-4480; the upper 10) for the other. Achieved (r fitted;
// held-back RMS, fitted vs fixed clock): odd from even r 0.667, 1.19% vs
// 1.78%; even from odd 0.488, 1.92% vs 2.34%; upper from lower 0.808, 1.56%
// vs 1.73%; lower from upper 0.450, 1.95% vs 2.38%.
TEST_F(H200ReferenceSweep, HeldBackPoints) {
  const std::vector<SweepPoint> lower(points_.begin(), points_.begin() + 11);
  const std::vector<SweepPoint> upper(points_.begin() + 11, points_.end());
  const std::vector<std::pair<std::vector<SweepPoint>, std::vector<SweepPoint>>> splits = {
      {alternate(0), alternate(1)}, {alternate(1), alternate(0)}, {lower, upper}, {upper, lower}};
  for (std::size_t s = 0; s < splits.size(); ++s) {
    SCOPED_TRACE("split " + std::to_string(s));
    const auto& [fitted_on, held_back] = splits[s];
    const double recovery = fit_power_cap_recovery(fitted_on).recovery;
    EXPECT_GT(recovery, 0.4);
    EXPECT_LT(recovery, 0.85);
    const double held = rms(relative_errors(held_back, recovery));
    EXPECT_LE(held, 0.020);
    EXPECT_LT(held, rms(relative_errors(held_back, 0.0)));
  }
}

// The dips: the points the fixed-clock model says lose 5% or more (N 3904,
// 4288, 4352, 4416, 4800, 4864, 4928, 4992). A dip's depth is 1 - its value
// over the mean of the other points. The fitted model's mean depth is within
// half a percentage point of the measured (2.44% vs 2.67%); the fixed clock's
// (4.78%) is not, nearly twice as deep. N 4800, the deepest: measured 4.30%,
// fitted 3.25%, fixed clock 7.74%.
TEST_F(H200ReferenceSweep, DipDepthMatchesTheMeasured) {
  const std::vector<double> fixed = power_capped_predictions(points_, 0.0);
  const std::vector<double> fitted = power_capped_predictions(points_, kPowerCapWaveRecovery);
  std::vector<double> measured;
  for (const auto& p : points_) measured.push_back(p.tflops);
  std::vector<bool> dip;
  for (double e : fixed) dip.push_back(e < 0.95);
  ASSERT_EQ(std::count(dip.begin(), dip.end(), true), 8);
  // Mean depth over the dips, and the depth of one point.
  auto depths = [&](const std::vector<double>& values) {
    double undipped = 0, depth = 0;
    for (std::size_t i = 0; i < values.size(); ++i) undipped += dip[i] ? 0 : values[i] / 13;
    for (std::size_t i = 0; i < values.size(); ++i) depth += dip[i] ? (1 - values[i] / undipped) / 8 : 0;
    const std::size_t n4800 = 15;  // 3840 + 15 x 64
    return std::pair{depth, 1 - values[n4800] / undipped};
  };
  const auto [measured_depth, measured_4800] = depths(measured);
  const auto [fitted_depth, fitted_4800] = depths(fitted);
  const auto [fixed_depth, fixed_4800] = depths(fixed);
  EXPECT_NEAR(measured_depth, 0.0267, 0.0005);
  EXPECT_NEAR(fitted_depth, measured_depth, 0.005);
  EXPECT_GT(std::abs(fixed_depth - measured_depth), 0.015);
  EXPECT_NEAR(fitted_4800, measured_4800, 0.015);
  EXPECT_GT(std::abs(fixed_4800 - measured_4800), 0.03);
}

TEST(TileShapes, ParseTile) {
  EXPECT_EQ(parse_tile("128x256"), (TileShape{128, 256}));
  for (const char* bad : {"12x", "x12", "0x8", "128", "128x256x64", "-1x8", "axb", ""})
    EXPECT_FALSE(parse_tile(bad)) << bad;
  EXPECT_EQ(tile_text({64, 128}), "64x128");
}

TEST(TileShapes, CublasLtTileIds) {
  // Values of cublasLtMatmulTile_t in cuBLAS 13.1's cublasLt.h.
  EXPECT_EQ(tile_from_cublaslt_id(1), (TileShape{8, 8}));
  EXPECT_EQ(tile_from_cublaslt_id(20), (TileShape{128, 128}));
  EXPECT_EQ(tile_from_cublaslt_id(23), (TileShape{128, 256}));
  EXPECT_EQ(tile_from_cublaslt_id(24), (TileShape{256, 128}));
  EXPECT_EQ(tile_from_cublaslt_id(33), (TileShape{128, 96}));
  EXPECT_EQ(tile_from_cublaslt_id(177), (TileShape{128, 384}));
  EXPECT_EQ(tile_from_cublaslt_id(634), (TileShape{512, 1024}));
  EXPECT_EQ(max_known_cublaslt_tile_id(), 634);
  EXPECT_FALSE(tile_from_cublaslt_id(0));  // CUBLASLT_MATMUL_TILE_UNDEFINED
  EXPECT_FALSE(tile_from_cublaslt_id(635));
  EXPECT_FALSE(tile_from_cublaslt_id(-1));
}

TEST(TileShapes, KernelNames) {
  EXPECT_EQ(tile_from_kernel_name("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_"
                                  "execute_segment_k_off_kernel__5x_cublas"),
            (TileShape{128, 256}));
  EXPECT_EQ(tile_from_kernel_name("cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_"
                                  "warpspecialized_cooperative_epi_tma"),
            (TileShape{128, 256}));
  EXPECT_EQ(tile_from_kernel_name("ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_32x3_nn"), (TileShape{256, 128}));
  EXPECT_EQ(tile_from_kernel_name("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8"),
            (TileShape{64, 64}));
  EXPECT_EQ(tile_from_kernel_name("nvjet_hsh_192x128_64x4_2x1_v_bz_coopA_TNT"), (TileShape{192, 128}));
  EXPECT_FALSE(tile_from_kernel_name("void gemv2T_kernel_val<int, int, float, float, float, 128, 16, 4, 4, false>"));
  EXPECT_FALSE(tile_from_kernel_name("vectorized_elementwise_kernel_1x2x1"));
  EXPECT_FALSE(tile_from_kernel_name(""));
}

TEST(GpuPeaks, DatasheetTable) {
  const auto h100 = lookup_gpu_peaks("NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(h100);
  EXPECT_EQ(h100->sm_count, 132);
  EXPECT_DOUBLE_EQ(h100->tflops(PeakDtype::bf16), 989.4);
  EXPECT_DOUBLE_EQ(h100->tflops(PeakDtype::fp8), 1978.9);
  EXPECT_DOUBLE_EQ(h100->tflops(PeakDtype::tf32), 494.7);
  EXPECT_DOUBLE_EQ(h100->hbm_GBps, 3350);

  const auto h200 = lookup_gpu_peaks("NVIDIA H200");
  ASSERT_TRUE(h200);
  EXPECT_DOUBLE_EQ(h200->tflops(PeakDtype::bf16), 989.4);
  EXPECT_DOUBLE_EQ(h200->hbm_GBps, 4800);

  const auto a100 = lookup_gpu_peaks("NVIDIA A100-SXM4-80GB");
  ASSERT_TRUE(a100);
  EXPECT_EQ(a100->sm_count, 108);
  EXPECT_DOUBLE_EQ(a100->tflops(PeakDtype::bf16), 312);
  EXPECT_DOUBLE_EQ(a100->tflops(PeakDtype::fp32), 19.5);
  EXPECT_DOUBLE_EQ(a100->tflops(PeakDtype::fp8), 0);  // no FP8 on Ampere
  EXPECT_DOUBLE_EQ(a100->hbm_GBps, 2039);
  EXPECT_DOUBLE_EQ(lookup_gpu_peaks("NVIDIA A100-SXM4-40GB")->hbm_GBps, 1555);

  const auto b200 = lookup_gpu_peaks("NVIDIA B200");
  ASSERT_TRUE(b200);
  EXPECT_EQ(b200->sm_count, 148);
  EXPECT_DOUBLE_EQ(b200->tflops(PeakDtype::bf16), 2250);
  EXPECT_DOUBLE_EQ(b200->tflops(PeakDtype::fp8), 4500);

  EXPECT_EQ(lookup_gpu_peaks("h100")->model, "H100 SXM");  // case-insensitive, as users type it
  EXPECT_EQ(lookup_gpu_peaks("NVIDIA H100 PCIe")->sm_count, 114);
  EXPECT_FALSE(lookup_gpu_peaks("NVIDIA H100 NVL"));  // other ceilings: unknown, not wrong
  EXPECT_FALSE(lookup_gpu_peaks("NVIDIA GB200"));
  EXPECT_FALSE(lookup_gpu_peaks("Tesla V100-SXM2-32GB"));

  EXPECT_EQ(parse_peak_dtype("bf16"), PeakDtype::bf16);
  EXPECT_FALSE(parse_peak_dtype("int8"));
  EXPECT_STREQ(peak_dtype_name(PeakDtype::tf32), "tf32");
}

// ---- gemm_bench predict, the real binary ----

class GemmBenchPredict : public redline::testing::ToolTest {
 protected:
  const char* binary() const override { return GEMM_BENCH_BIN; }
};

TEST_F(GemmBenchPredict, SweepWritesTheModelAndFlagsLosses) {
  const auto csv = dir_ / "p.csv", json = dir_ / "p.json";
  const ChildResult child = run({"predict", "--m", "4096", "--n", "3968:4352:32", "--k", "4096", "--tile", "128x256",
                                 "--gpu", "H100", "--csv", csv.string(), "--json", json.string()});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_CONTAINS(child.output, "8 of 13 shapes lose more than 10.0%");
  EXPECT_CONTAINS(child.output, "n -> 5120");
  ASSERT_TRUE(fs::exists(json));

  const CsvTable t = read_csv(csv);
  ASSERT_EQ(t.rows.size(), 13u);
  EXPECT_EQ(t.value(0, "tool"), "gemm_bench");
  EXPECT_EQ(t.value(4, "n"), "4096");
  EXPECT_EQ(t.value(4, "tile"), "128x256");
  EXPECT_EQ(t.value(4, "sms"), "132");
  EXPECT_EQ(t.value(4, "tiles"), "512");
  EXPECT_NEAR(std::stod(t.value(4, "waves")), 512.0 / 132, 1e-9);
  EXPECT_NEAR(std::stod(t.value(4, "wave_efficiency")), 512.0 / 528, 1e-9);
  EXPECT_NEAR(std::stod(t.value(4, "predicted_efficiency")), 512.0 / 528, 1e-9);
  EXPECT_EQ(t.value(4, "note"), "");
  EXPECT_EQ(t.value(5, "tiles"), "544");
  EXPECT_CONTAINS(t.value(5, "note"), "n 5120");
  EXPECT_EQ(t.value(5, "status"), "ok");
}

TEST_F(GemmBenchPredict, SmsWithoutATableGpu) {
  const ChildResult child = run({"predict", "--m", "4097", "--n", "4096", "--k", "4096", "--tile", "128x256", "--sms",
                                 "132", "--ctas-per-sm", "1", "--split-k", "1"});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_CONTAINS(child.output, "0 of 1 shapes");
}

TEST_F(GemmBenchPredict, BadInputIsExit2NamingFlagAndValue) {
  const std::vector<std::string> base = {"predict", "--k", "4096", "--m", "4096"};
  auto with = [&](std::vector<std::string> extra) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_usage_error(with({"--n", "4096", "--tile", "12x", "--sms", "132"}), "--tile '12x'");
  expect_usage_error(with({"--n", "4096", "--tile", "128x256", "--sms", "0"}), "--sms '0'");
  expect_usage_error(with({"--n", "0", "--tile", "128x256", "--sms", "132"}), "--n '0'");
  expect_usage_error(with({"--n", "4096", "--tile", "128x256", "--gpu", "V100"}), "--gpu 'V100'");
  expect_usage_error(with({"--n", "4096", "--tile", "128x256", "--sms", "132", "--split-k", "0"}), "--split-k '0'");
  expect_usage_error(with({"--n", "4096", "--tile", "128x256", "--sms", "132", "--pad-dim", "k"}), "--pad-dim 'k'");
  expect_usage_error(with({"--n", "4096:1024:8", "--tile", "128x256", "--sms", "132"}), "--n '4096:1024:8'");
  expect_usage_error(with({"--n", "4096", "--tile", "128x256"}), "--sms");
  expect_usage_error({"predict", "--m", "1", "--n", "1", "--k", "1"}, "--tile");
  expect_usage_error({}, "subcommand");
  expect_usage_error({"predcit", "--m", "1"}, "COMMAND 'predcit': unknown; use one of predict, peak, sweep, model");
  // A tile count beyond int64 is bad input, not a crash or an error exit.
  expect_usage_error({"predict", "--m", "2147483647", "--n", "2147483647", "--k", "1", "--tile", "1x1", "--sms", "1",
                      "--split-k", "1024"},
                     "--m/--n/--tile/--split-k '2147483647/2147483647/1x1/1024'");
  expect_usage_error(with({"--n", "10:5", "--tile", "128x256", "--sms", "132"}), "stop is below its start");
#if defined(GEMM_BENCH_TAKES_BENCHMARK_FLAGS)
  // Checked before the subcommand, with or without a GPU build.
  expect_usage_error(with({"--n", "4096", "--tile", "128x256", "--sms", "132", "--benchmark_format=xml"}),
                     "--benchmark_format 'xml'");
  expect_usage_error(with({"--n", "4096", "--tile", "128x256", "--sms", "132", "--benchmark_min_time=1"}),
                     "--benchmark_min_time '1': not taken by gemm_bench");
#endif
}

TEST_F(GemmBenchPredict, PaddingAdviceSaysItIsEfficiencyInTheSameTime) {
  const ChildResult child = run({"predict", "--m", "4096", "--n", "4160", "--k", "4096", "--tile", "128x256", "--sms",
                                 "132", "--csv", (dir_ / "pad.csv").string()});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  const CsvTable t = read_csv(dir_ / "pad.csv");
  EXPECT_EQ(t.value(0, "note"), "loses 21.2%; n 5120: efficiency +23.1%, same time");
  // Where the padded size needs another wave, the note says so: more work
  // per second, but not the same time. (5120 x 2048: no N in 3 waves loses
  // under 5%.)
  const ChildResult more = run({"predict", "--m", "5120", "--n", "2048", "--k", "4096", "--tile", "128x256", "--sms",
                                "132", "--csv", (dir_ / "waves.csv").string()});
  ASSERT_EQ(more.exit_code, 0) << more.output;
  EXPECT_EQ(read_csv(dir_ / "waves.csv").value(0, "note"),
            "loses 19.2%; n 3328: efficiency +21.9%, 4 waves instead of 3");
  EXPECT_CONTAINS(more.output, "n -> 3328: predicted efficiency 0.808 -> 0.985 (+21.9%; 4 waves instead of 3)");
}

// The advice names a size that recovers (loses under 5%), however far up to
// 2x; past that it says none does, with the best it saw.
TEST_F(GemmBenchPredict, PaddingAdviceNamesASizeThatRecovers) {
  const ChildResult child = run({"predict", "--m", "2304", "--n", "1664", "--k", "4096", "--tile", "256x128", "--gpu",
                                 "A100", "--csv", (dir_ / "a100.csv").string()});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_EQ(read_csv(dir_ / "a100.csv").value(0, "note"), "loses 45.8%; n 2944: efficiency +76.9%, same time");
  EXPECT_CONTAINS(child.output, "n -> 2944: predicted efficiency 0.542 -> 0.958");
  const ChildResult none = run({"predict", "--m", "256", "--n", "128", "--k", "64", "--tile", "256x128", "--gpu",
                                "A100", "--csv", (dir_ / "none.csv").string()});
  ASSERT_EQ(none.exit_code, 0) << none.output;
  EXPECT_EQ(read_csv(dir_ / "none.csv").value(0, "note"),
            "loses 99.1%; no n up to 256 (2x, or the first tile multiple above) loses less than 5.0%; best n 256: "
            "predicted efficiency 0.019");
  // n 100 in 256-wide tiles (128x256): 2x is 200, but the search reaches the first multiple, 256, and says so.
  const ChildResult narrow = run({"predict", "--m", "4096", "--n", "100", "--k", "64", "--tile", "128x256", "--sms",
                                  "132", "--csv", (dir_ / "narrow.csv").string()});
  ASSERT_EQ(narrow.exit_code, 0) << narrow.output;
  EXPECT_CONTAINS(read_csv(dir_ / "narrow.csv").value(0, "note"), "no n up to 256 (2x, or the first tile multiple above)");
  EXPECT_CONTAINS(read_csv(dir_ / "narrow.csv").value(0, "note"), "best n 256");
}

// Beside the fixed-clock prediction, the fitted power-cap one, named as such
// and explained in the summary; full_waves counts only full waves.
TEST_F(GemmBenchPredict, PowerCappedColumnBesideTheFixedClock) {
  const ChildResult child = run({"predict", "--m", "8192", "--n", "4800", "--k", "4096", "--tile", "192x192", "--gpu",
                                 "H200", "--csv", (dir_ / "h200.csv").string()});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_CONTAINS(child.output, "*_power_capped columns: fitted for a GPU at its power cap");
  EXPECT_CONTAINS(child.output, "r = 0.57 from one H200 bf16 sweep");
  const CsvTable t = read_csv(dir_ / "h200.csv");
  const auto r = predict_gemm(problem(8192, 4800, 4096, {192, 192}, 132));
  EXPECT_NEAR(std::stod(t.value(0, "predicted_efficiency")), r.predicted_efficiency, 1e-12);
  EXPECT_NEAR(std::stod(t.value(0, "predicted_efficiency_power_capped")), power_capped_efficiency(r), 1e-12);
  EXPECT_GT(std::stod(t.value(0, "predicted_efficiency_power_capped")), r.predicted_efficiency + 0.04);
  EXPECT_EQ(t.value(0, "full_waves"), "8");  // 8.14 waves: 8 full, a ninth part-empty
}

// The measuring subcommands validate every flag before they look for a GPU,
// so bad input fails the same way on a machine with or without one.
TEST_F(GemmBenchPredict, MeasuringSubcommandsRejectBadInputBeforeLookingForAGpu) {
#if !defined(GEMM_BENCH_MEASURES)
  GTEST_SKIP() << "this build's gemm_bench has predict only (no CUDA, cuBLASLt or Google Benchmark)";
#endif
  const std::vector<std::string> shape = {"--m", "4096", "--n", "4096", "--k", "4096"};
  auto sweep = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"sweep"};
    args.insert(args.end(), shape.begin(), shape.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_usage_error(sweep({"--dtype", "bf17"}), "--dtype 'bf17'");
  expect_usage_error(sweep({"--layout", "tt"}), "--layout 'tt'");
  expect_usage_error(sweep({"--batch", "0"}), "--batch '0'");
  expect_usage_error(sweep({"--batch", "65536"}), "--batch '65536'");
  expect_usage_error(sweep({"--dtype", "fp8", "--layout", "nt"}), "needs the tn layout");
  expect_usage_error(sweep({"--target-cv", "1.5"}), "--target-cv '1.5'");
  expect_usage_error(sweep({"--min-reps", "10", "--max-reps", "5"}), "--max-reps '5'");
  expect_usage_error(sweep({"--warmup", "-1"}), "--warmup '-1'");
  expect_usage_error(sweep({"--algos", "0"}), "--algos '0'");
  expect_usage_error(sweep({"--gpu", "V100"}), "--gpu 'V100'");
  expect_usage_error(sweep({"--dtype", "bf16,fp16", "--datasheet-tflops", "900"}), "--datasheet-tflops '900'");
  // FP8 needs the tn layout and K a multiple of 16: no shape here can run.
  expect_usage_error(sweep({"--dtype", "fp8", "--layout", "nn"}), "needs the tn layout");
  expect_usage_error({"sweep", "--m", "64", "--n", "64", "--k", "24", "--dtype", "fp8_e4m3_e5m2"}, "lda = K = 24");
  // Google Benchmark's own flags are checked too.
  expect_usage_error(sweep({"--benchmark_format=xml"}), "--benchmark_format 'xml'");
  expect_usage_error(sweep({"--benchmark_filter=("}), "--benchmark_filter '('");
  expect_usage_error(sweep({"--benchmark_no_such_flag=1"}), "--benchmark_no_such_flag '1'");
  // Flags that would re-run each case's whole measurement are refused.
  expect_usage_error(sweep({"--benchmark_min_time=2"}), "--benchmark_min_time '2'");
  expect_usage_error(sweep({"--benchmark_repetitions=0"}), "--benchmark_repetitions '0'");
  expect_usage_error(sweep({"--benchmark_out_format=xml"}), "--benchmark_out_format 'xml'");
  expect_usage_error(sweep({"--benchmark_filter=a{,2}"}), "--benchmark_filter 'a{,2}'");
  expect_usage_error(sweep({"--benchmark_out=" + (dir_ / "a_dir").string() + "/"}), "--benchmark_out");
  expect_usage_error({"sweep", "--m", "0", "--n", "1", "--k", "1"}, "--m '0'");
  expect_usage_error({"peak", "--search", "slow"}, "--search 'slow'");
  expect_usage_error({"peak", "--datasheet-gbps", "-1"}, "--datasheet-gbps '-1'");
  expect_usage_error({"peak", "--search", "check", "--k", "0"}, "--k '0'");
  expect_usage_error({"peak", "--search", "check", "--m", "1:100000:1", "--n", "1:100:1"}, "at most");
  // The quick search picks its own shapes: a grid flag beside it is refused, a bad one named.
  expect_usage_error({"peak", "--m", "abc"}, "--m 'abc'");
  expect_usage_error({"predict", "--m", "64", "--n", "64", "--k", "64", "--tile", "1x65537"}, "each edge 1 to 65536");
  expect_usage_error(sweep({"--benchmark_out="}), "--benchmark_out '': is empty");
  expect_usage_error({"model", "--hidden", "4096", "--heads", "32", "--ffn", "11008", "--vocab", "32000", "--seq",
                      "1048576", "--mbs", "4096"},
                     "--seq/--mbs '1048576/4096': make 4294967296 tokens");
  expect_usage_error({"peak", "--n", "4096"}, "--n '4096': is for --search exhaustive or check");
  expect_usage_error({"predict", "--m", "4096", "--n", "1,", "--k", "4096", "--tile", "128x256"},
                     "--n '1,': has an empty item");
  expect_usage_error({"predict", "--m", "4096", "--n", "4096", "--k", "4096", "--tile", "128x256", "--pad-dim", ""},
                     "--pad-dim '': is empty");
  expect_usage_error({"model", "--hidden", "1000", "--heads", "16", "--ffn", "4096", "--vocab", "50304", "--seq",
                      "2048", "--mbs", "1"},
                     "--hidden '1000'");
  expect_usage_error({"model", "--hidden", "1024", "--heads", "16", "--ffn", "4096", "--vocab", "50257", "--seq",
                      "2048", "--mbs", "1", "--tp", "2"},
                     "--vocab '50257'");
}

// Good input on a machine without a GPU is "cannot run here" (77, ctest's
// skip) with the reason; on a GPU, a filter that matches nothing runs nothing.
TEST_F(GemmBenchPredict, MeasuringWithoutAGpuSkipsWithTheReason) {
  const auto csv = dir_ / "none.csv";
  std::vector<std::string> args = {"peak", "--dtype", "bf16", "--no-roofline", "--csv", csv.string()};
#if defined(GEMM_BENCH_TAKES_BENCHMARK_FLAGS)  // built without Google Benchmark, gemm_bench refuses them
  args.push_back("--benchmark_filter=^nothing$");
#endif
  const ChildResult child = run(args);
  if (child.exit_code == 0) GTEST_SKIP() << "this machine has a GPU: covered by scripts/gpu-check";
  EXPECT_EQ(child.exit_code, 77) << child.output;
  EXPECT_CONTAINS(child.output, "gemm_bench: skipped: ");
  EXPECT_FALSE(fs::exists(csv)) << "a run that cannot start writes no report";
  // FP8 cannot run nn, but the other dtypes can: not bad input.
  const ChildResult nn = run({"sweep", "--m", "256", "--n", "256", "--k", "256", "--dtype", "all", "--layout", "nn"});
  EXPECT_EQ(nn.exit_code, 77) << nn.output;
  // A batched nt sweep (attention's dV GEMM) is good input too.
  const ChildResult batched =
      run({"sweep", "--m", "128", "--n", "4096", "--k", "4096", "--layout", "nt", "--batch", "64"});
  EXPECT_EQ(batched.exit_code, 77) << batched.output;
}

}  // namespace
