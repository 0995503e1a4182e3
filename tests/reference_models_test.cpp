// The models held to the project's own GPU measurements (results/references/):
// the attention model's fit and a shape held back from it, the training
// step's memory model, and the reference folders themselves (found per GPU
// model, compared with in one line, accepted by compare as a baseline).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "harness/attention/attention_fit.hpp"
#include "harness/attention/layout_ranking.hpp"
#include "harness/gpu/gpu_peaks.hpp"
#include "harness/tracking/compare.hpp"
#include "harness/tracking/references.hpp"
#include "harness/train/activation_memory.hpp"
#include "support.hpp"

namespace redline {
namespace {

const std::filesystem::path kReferences = std::filesystem::path(SOURCE_DIR) / "results" / "references";

RunResults h200() { return load_results(kReferences / "H200"); }
ModelGpu h200_gpu() { return model_gpu(*lookup_gpu_peaks("NVIDIA H200")); }

struct LayoutTimes {
  std::vector<double> predicted_ms, measured_ms;
};

// One sweep's layouts at one batch: the model's block times and the measured
// ones (the model's FLOPs over the measured TFLOPS: the tool's convention).
LayoutTimes block_times(const RunResults& reference, std::int64_t hidden, const std::vector<std::int64_t>& heads,
                        std::int64_t kv_heads, std::int64_t batch, bool causal) {
  const ModelGpu gpu = h200_gpu();
  LayoutTimes t;
  for (std::int64_t a : heads) {
    const HeadLayout layout{hidden, a, kv_heads ? kv_heads : a, 1};
    const auto tflops = measured_tflops(reference, {layout, batch, 4096, causal, "bf16", "block_cudnn", "train"});
    EXPECT_TRUE(tflops) << "hidden " << hidden << " heads " << a;
    const LayoutPrediction p = predict_layout(layout, batch, 4096, causal, GemmDtype::bf16, gpu);
    t.predicted_ms.push_back(predicted_block_ms(p, gpu));
    t.measured_ms.push_back(tflops ? p.block_flop / (*tflops * 1e12) * 1e3 : 0);
  }
  return t;
}

std::vector<std::size_t> fastest_first(const std::vector<double>& times) {
  std::vector<std::size_t> order(times.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return times[a] < times[b]; });
  return order;
}

// The ranking equals the measured one, and each layout's time over the
// best's is within 5 points of the measured gap.
void expect_ranking_and_gaps(const LayoutTimes& t) {
  const auto predicted = fastest_first(t.predicted_ms), measured = fastest_first(t.measured_ms);
  EXPECT_EQ(predicted, measured);
  for (std::size_t i = 0; i < t.measured_ms.size(); ++i) {
    const double predicted_gap = t.predicted_ms[i] / t.predicted_ms[predicted.front()] - 1;
    const double measured_gap = t.measured_ms[i] / t.measured_ms[measured.front()] - 1;
    EXPECT_NEAR(predicted_gap, measured_gap, 0.05) << "layout " << i;
  }
}

TEST(AttentionFit, TheCompiledInParametersAreTheH200ReferencesFit) {
  const FusedKernelFit fit = fit_fused_kernels(h200(), h200_gpu(), "test");
  const FusedKernelFit built_in;
  EXPECT_NEAR(fit.fwd_ceiling, built_in.fwd_ceiling, 0.005);
  EXPECT_NEAR(fit.bwd_ceiling, built_in.bwd_ceiling, 0.005);
  EXPECT_NEAR(fit.exp_exposed, built_in.exp_exposed, 0.005);
  EXPECT_NEAR(fit.large_head_fwd, built_in.large_head_fwd, 0.005);
  EXPECT_NEAR(fit.large_head_bwd, built_in.large_head_bwd, 0.005);
  EXPECT_NEAR(fit.gemm_ceiling, built_in.gemm_ceiling, 0.005);
  EXPECT_NEAR(fit.fp8_bwd_ceiling, built_in.fp8_bwd_ceiling, 0.005);
}

TEST(AttentionFit, NamesTheMeasurementItLacks) {
  RunResults empty;
  empty.source = "nowhere";
  try {
    fit_fused_kernels(empty, h200_gpu(), "test");
    ADD_FAILURE() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_CONTAINS(e.what(), "cudnn fwd row at hidden 4096");
  }
}

TEST(AttentionReference, Hidden4096RanksAsMeasured) {  // the fit set
  expect_ranking_and_gaps(block_times(h200(), 4096, {16, 32, 64}, 0, 4, false));
}

TEST(AttentionReference, Hidden5120HeldBackFromTheFitRanksAsMeasured) {
  const LayoutTimes t = block_times(h200(), 5120, {32, 40, 64}, 8, 2, true);
  expect_ranking_and_gaps(t);
  EXPECT_EQ(fastest_first(t.predicted_ms).front(), 1u);  // d = 128
}

TEST(AttentionReference, ThePublishedShapeHeldBackIsNear) {
  const ModelGpu gpu = h200_gpu();
  const HeadLayout layout{8192, 64, 8, 1};
  const LayoutPrediction p = predict_layout(layout, 1, 16384, false, GemmDtype::bf16, gpu);
  const auto fwd = measured_tflops(h200(), {layout, 1, 16384, false, "bf16", "cudnn", "fwd"});
  const auto bwd = measured_tflops(h200(), {layout, 1, 16384, false, "bf16", "cudnn", "bwd"});
  ASSERT_TRUE(fwd && bwd);
  EXPECT_NEAR(p.fused_fwd.efficiency * gpu.peak_tflops / *fwd, 1, 0.03);
  EXPECT_NEAR(p.fused_bwd.efficiency * gpu.peak_tflops / *bwd, 1, 0.06);
}

// FP8, against the dtype's peak as the sweep measures it. The forward was
// fitted on bf16 alone: held to both GPUs' FP8 measurements (the H200's and
// the H100's of one shape), it reads 6-7% low. The backward's ceiling is
// fitted to the H200's; the H100's is another GPU's run of the same shape.
TEST(AttentionReference, FP8AgainstBothGpusMeasurements) {
  const ModelGpu gpu = h200_gpu();
  const HeadLayout layout{8192, 64, 8, 1};
  const LayoutPrediction p = predict_layout(layout, 1, 32768, false, GemmDtype::fp8_e4m3, gpu);
  for (const char* folder : {"H200", "H100-SXM"}) {
    SCOPED_TRACE(folder);
    const RunResults reference = load_results(kReferences / folder);
    const auto fwd = measured_tflops(reference, {layout, 1, 32768, false, "fp8", "cudnn", "fwd"});
    const auto bwd = measured_tflops(reference, {layout, 1, 32768, false, "fp8", "cudnn", "bwd"});
    ASSERT_TRUE(fwd && bwd);
    EXPECT_NEAR(p.fused_fwd.efficiency * gpu.fp8_peak_tflops / *fwd, 1, 0.08);
    EXPECT_NEAR(p.fused_bwd.efficiency * gpu.fp8_peak_tflops / *bwd, 1, 0.01);
  }
}

// Every measured peak of the references against the memory model: within 1%.
TEST(TrainMemoryReference, PredictedPeaksWithinOnePercent) {
  int checked = 0;
  for (const char* folder : {"H200", "H100-SXM"})
    for (const ResultRow& row : load_results(kReferences / folder).rows) {
      const auto measured = row.metrics.find("measured_peak_bytes");
      if (row.tool != "train_step_bench" || measured == row.metrics.end()) continue;
      ModelConfig config = *model_preset(row.params.at("model"));
      config.layers = std::stoll(row.params.at("layers"));
      const MemoryPrediction p = predict_memory(config, std::stoll(row.params.at("mbs")), std::stoll(row.params.at("seq")),
                                                *parse_recompute(row.params.at("recompute")));
      EXPECT_NEAR(static_cast<double>(p.peak()) / measured->second, 1, 0.01) << folder << " " << row.case_key;
      ++checked;
    }
  EXPECT_GE(checked, 3);
}

TEST(References, FoundByGpuModel) {
  const auto h200 = find_reference(kReferences, "NVIDIA H200");
  ASSERT_TRUE(h200);
  EXPECT_EQ(h200->folder.filename(), "H200");
  EXPECT_EQ(h200->driver, "580.159.04");
  EXPECT_FALSE(h200->results.rows.empty());
  const auto h100 = find_reference(kReferences, "NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(h100);
  EXPECT_EQ(h100->folder.filename(), "H100-SXM");
  EXPECT_FALSE(find_reference(kReferences, "NVIDIA A100-SXM4-80GB"));
  EXPECT_FALSE(find_reference(kReferences / "absent", "NVIDIA H200"));
}

RunResults mamf_run(double bf16_tflops) {
  RunResults run;
  ResultRow row;
  row.run_id = "run-1", row.timestamp_utc = "2026-12-01T00:00:00Z", row.gpu = "NVIDIA H200", row.tool = "gemm_bench";
  row.case_key = "dtype=bf16;layout=tn;result=mamf", row.status = RowStatus::ok;
  row.params = {{"dtype", "bf16"}, {"layout", "tn"}, {"result", "mamf"}};
  row.metrics = {{"tflops", bf16_tflops}};
  run.rows.push_back(row);
  return run;
}

TEST(References, OneLinePerFigureAgainstTheReference) {
  const auto reference = find_reference(kReferences, "NVIDIA H200");
  ASSERT_TRUE(reference);
  const auto lines = reference_lines(mamf_run(712.3), *reference, Schema::compiled_in());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_CONTAINS(lines[0], "MAMF dtype=bf16;layout=tn 712.3 TFLOPS: 2.2% below the reference H200 (728.6, 2026-11-22, "
                            "driver 580.159.04, 700 W cap, transcribed)");
}

TEST(References, CompareTakesAReferenceAsBaselineWithoutFailingOnCasesNotRun) {
  const auto reference = find_reference(kReferences, "NVIDIA H200");
  ASSERT_TRUE(reference);
  CompareOptions options;
  options.baseline_is_reference = true;
  const Comparison same = compare_results(reference->results, mamf_run(728.6), Schema::compiled_in(), options);
  EXPECT_FALSE(same.regressed());
  EXPECT_TRUE(same.only_in_baseline.empty());
  EXPECT_FALSE(same.not_run_now.empty());
  ASSERT_EQ(same.metrics.size(), 1u);
  const Comparison slower = compare_results(reference->results, mamf_run(600), Schema::compiled_in(), options);
  EXPECT_TRUE(slower.regressed());
  // As a plain baseline, the cases not run now would be regressions.
  EXPECT_TRUE(compare_results(reference->results, mamf_run(728.6), Schema::compiled_in()).regressed());
}

}  // namespace
}  // namespace redline
