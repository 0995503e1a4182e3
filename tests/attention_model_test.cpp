// The attention room without a GPU: FLOP conventions, head layouts and their
// constraints, the fused-kernel support tables, the model's factors and the
// ranking, and the CPU reference, gradient-checked with finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "harness/attention/attention_model.hpp"
#include "harness/attention/attention_reference.hpp"
#include "harness/attention/group_check.hpp"
#include "harness/attention/layout_ranking.hpp"
#include "harness/attention/sweep_analysis.hpp"
#include "harness/core/splitmix64.hpp"
#include "support.hpp"

using namespace redline;

namespace {

AttentionShape shape_of(std::int64_t b, std::int64_t s, std::int64_t a_q, std::int64_t a_kv, std::int64_t d,
                        bool causal = false) {
  AttentionShape shape;
  shape.batch = b, shape.seq = s, shape.heads = a_q, shape.kv_heads = a_kv, shape.head_dim = d, shape.causal = causal;
  return shape;
}

ModelGpu h100() { return model_gpu(*lookup_gpu_peaks("H100")); }

const ModelFactor& factor(const std::vector<ModelFactor>& factors, const std::string& name) {
  for (const auto& f : factors)
    if (f.name == name) return f;
  throw std::runtime_error("no factor " + name);
}

bool has_factor(const std::vector<ModelFactor>& factors, const std::string& name) {
  return std::any_of(factors.begin(), factors.end(), [&](const ModelFactor& f) { return f.name == name; });
}

}  // namespace

// ---- FLOPs and shapes ----

TEST(AttentionShape, FlopConventions) {
  const AttentionShape s = shape_of(2, 1024, 32, 8, 128);
  EXPECT_DOUBLE_EQ(attention_forward_flop(s), 4.0 * 2 * 32 * 1024.0 * 1024 * 128);
  EXPECT_DOUBLE_EQ(attention_backward_flop(s), 2.5 * attention_forward_flop(s));
  // GQA shares K and V; the query heads' FLOPs stay.
  EXPECT_DOUBLE_EQ(attention_forward_flop(shape_of(2, 1024, 32, 32, 128)), attention_forward_flop(s));
  // Causal: the exact count of unmasked scores, 1 + 2 + ... + s, not s^2 / 2.
  const AttentionShape c = shape_of(1, 4, 1, 1, 8, true);
  EXPECT_DOUBLE_EQ(unmasked_scores(c), 10);
  EXPECT_DOUBLE_EQ(attention_forward_flop(c), 4.0 * 8 * 10);
  EXPECT_DOUBLE_EQ(softmax_scale(s), 1.0 / std::sqrt(128.0));
  EXPECT_EQ(query_elements(s), 2 * 32 * 1024 * 128);
  EXPECT_EQ(kv_elements(s), 2 * 8 * 1024 * 128);
}

TEST(AttentionShape, ValidateNamesTheField) {
  EXPECT_NO_THROW(validate(shape_of(1, 1, 4, 1, 8)));
  try {
    validate(shape_of(1, 1, 4, 3, 8));
    FAIL() << "kv_heads 3 of 4 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(std::string(e.what()), "kv_heads = 3");
  }
  EXPECT_THROW(validate(shape_of(1, 0, 4, 1, 8)), std::invalid_argument);
  EXPECT_THROW(validate(shape_of(1, 1, 4, 1, 0)), std::invalid_argument);
}

// ---- head layouts ----

TEST(HeadLayout, AutoTakesEveryWholeHeadDimFrom32To256) {
  EXPECT_EQ(auto_head_counts(4096), (std::vector<std::int64_t>{16, 32, 64, 128}));
  EXPECT_EQ(auto_head_counts(5120), (std::vector<std::int64_t>{20, 32, 40, 64, 80, 128, 160}));
  EXPECT_TRUE(auto_head_counts(20).empty());
}

TEST(HeadLayout, PowerOfTwoFactor) {
  EXPECT_EQ(power_of_two_factor(128), 128);
  EXPECT_EQ(power_of_two_factor(80), 16);
  EXPECT_EQ(power_of_two_factor(160), 32);
  EXPECT_EQ(power_of_two_factor(132), 4);
  EXPECT_EQ(power_of_two_factor(33), 1);
}

TEST(HeadLayout, ConstraintsRequiredAndSpeed) {
  const HeadLayout gqa{5120, 40, 8, 2};
  EXPECT_EQ(head_dim(gqa), 128);
  EXPECT_TRUE(layout_feasible(gqa));
  const auto all = layout_constraints(gqa);
  ASSERT_EQ(all.size(), 7u);
  EXPECT_EQ(all[0].name, "h % a_q == 0");
  EXPECT_CONTAINS(all[1].detail, "groups of 5");
  for (const auto& c : all) EXPECT_TRUE(c.met) << c.name;

  // d = 80: whole, a multiple of 8, not of 64, not a power of two.
  const auto d80 = layout_constraints({5120, 64, 8, 1});
  EXPECT_TRUE(d80[4].met);
  EXPECT_FALSE(d80[5].met);
  EXPECT_FALSE(d80[5].required);
  EXPECT_FALSE(d80[6].met);
  EXPECT_TRUE(layout_feasible({5120, 64, 8, 1}));

  EXPECT_FALSE(layout_feasible({4096, 48, 8, 1}));  // 4096 / 48 is not whole
  EXPECT_FALSE(layout_feasible({4096, 32, 3, 1}));  // 3 KV heads cannot share 32
  EXPECT_FALSE(layout_feasible({4096, 32, 8, 3}));  // 32 heads over 3 GPUs
  EXPECT_FALSE(layout_feasible({4096, 32, 2, 4}));  // 2 KV heads over 4 GPUs
  EXPECT_EQ(layout_constraints({4096, 48, 8, 1}).size(), 4u);  // no d: no speed constraints

  const AttentionShape per_gpu = per_gpu_shape({5120, 40, 8, 2}, 3, 2048, true);
  EXPECT_EQ(per_gpu.heads, 20);
  EXPECT_EQ(per_gpu.kv_heads, 4);
  EXPECT_EQ(per_gpu.head_dim, 128);
  EXPECT_TRUE(per_gpu.causal);
  EXPECT_THROW(per_gpu_shape({4096, 32, 3, 1}, 1, 1, false), std::invalid_argument);
  EXPECT_EQ(describe(HeadLayout{5120, 40, 8, 2}), "a_q=40 a_kv=8 d=128 tp=2");
}

// ---- fused kernels ----

TEST(FusedKernels, FlashAttention3RoundsUpToItsBuiltHeadDims) {
  const auto fwd = AttentionDirection::forward, bwd = AttentionDirection::backward;
  const std::vector<std::pair<std::int64_t, std::int64_t>> rounding = {
      {64, 64}, {80, 96}, {96, 96}, {112, 128}, {128, 128}, {160, 192}, {192, 192}, {256, 256}, {32, 64}};
  for (const auto& [d, kernel] : rounding) {
    const FusedSupport s = flash_attention3_support(d, GemmDtype::bf16, bwd, 90);
    EXPECT_TRUE(s.supported) << d;
    EXPECT_EQ(s.kernel_head_dim, kernel) << d;
  }
  EXPECT_CONTAINS(flash_attention3_support(80, GemmDtype::bf16, fwd, 90).reason, "rounds d = 80 up to 96");
  EXPECT_FALSE(flash_attention3_support(132, GemmDtype::bf16, fwd, 90).supported);  // not a multiple of 8
  EXPECT_FALSE(flash_attention3_support(264, GemmDtype::bf16, fwd, 90).supported);
  EXPECT_FALSE(flash_attention3_support(128, GemmDtype::bf16, fwd, 80).supported);  // Hopper only
  EXPECT_TRUE(flash_attention3_support(128, GemmDtype::fp8_e4m3, fwd, 90).supported);
  EXPECT_FALSE(flash_attention3_support(128, GemmDtype::fp8_e4m3, bwd, 90).supported);
}

TEST(FusedKernels, CudnnTakesMultiplesOf8AndFp8BackwardOnlyAt128OnHopper) {
  const auto fwd = AttentionDirection::forward, bwd = AttentionDirection::backward;
  for (std::int64_t d : {8, 80, 128, 160, 256}) {
    EXPECT_TRUE(cudnn_sdpa_support(d, GemmDtype::bf16, bwd, 90).supported) << d;
    EXPECT_EQ(cudnn_sdpa_support(d, GemmDtype::fp16, fwd, 90).kernel_head_dim, d);
  }
  EXPECT_FALSE(cudnn_sdpa_support(132, GemmDtype::bf16, fwd, 90).supported);
  EXPECT_FALSE(cudnn_sdpa_support(264, GemmDtype::bf16, fwd, 90).supported);
  EXPECT_FALSE(cudnn_sdpa_support(192, GemmDtype::bf16, bwd, 80).supported);  // Ampere backward stops at 128
  EXPECT_TRUE(cudnn_sdpa_support(192, GemmDtype::bf16, fwd, 80).supported);
  EXPECT_TRUE(cudnn_sdpa_support(128, GemmDtype::fp8_e4m3, bwd, 90).supported);
  const FusedSupport fp8_bwd_64 = cudnn_sdpa_support(64, GemmDtype::fp8_e4m3, bwd, 90);
  EXPECT_FALSE(fp8_bwd_64.supported);
  EXPECT_CONTAINS(fp8_bwd_64.reason, "d = 128 only");
  EXPECT_TRUE(cudnn_sdpa_support(64, GemmDtype::fp8_e4m3, fwd, 90).supported);
  EXPECT_FALSE(cudnn_sdpa_support(128, GemmDtype::fp8_e4m3, fwd, 80).supported);
  EXPECT_FALSE(cudnn_sdpa_support(128, GemmDtype::fp32, fwd, 90).supported);
}

// ---- the model ----

TEST(AttentionModel, UnfusedGemmsCountTheConventionsWork) {
  const AttentionShape s = shape_of(2, 256, 8, 2, 64);
  const auto fwd = unfused_gemms(s, AttentionDirection::forward);
  ASSERT_EQ(fwd.size(), 2u);
  // A KV group's 4 query heads stacked: M = 4 x 256, per (batch, KV head).
  EXPECT_EQ(fwd[0].m, 1024);
  EXPECT_EQ(fwd[0].n, 256);
  EXPECT_EQ(fwd[0].k, 64);
  EXPECT_EQ(fwd[0].batch, 4);
  double flop = 0;
  for (const auto& g : fwd) flop += g.flop();
  EXPECT_DOUBLE_EQ(flop, attention_forward_flop(s));
  // The unfused backward keeps P: four GEMMs, twice the forward (the 2.5x
  // convention also counts the fused kernels' recompute of S).
  const auto bwd = unfused_gemms(s, AttentionDirection::backward);
  ASSERT_EQ(bwd.size(), 4u);
  flop = 0;
  for (const auto& g : bwd) flop += g.flop();
  EXPECT_DOUBLE_EQ(flop, 2 * attention_forward_flop(s));
  EXPECT_EQ(bwd[0].k, 1024);  // dV sums the group's query rows
}

TEST(AttentionModel, BestTileEfficiency) {
  // 132 x 128 rows by d = 80 columns: every candidate pads 80 to 128 or 256;
  // 128-wide tiles fill the SMs in whole waves, so 80 / 128.
  TileShape tile;
  EXPECT_DOUBLE_EQ(best_tile_efficiency(132 * 128, 80, 1, 132, &tile), 80.0 / 128);
  // 4096 x 4096 x 4 batches: 128x64 tiles make 8,192 CTAs in 63 waves of
  // 132, the fullest last wave of the candidates (128x256: 2,048 in 16).
  EXPECT_NEAR(best_tile_efficiency(4096, 4096, 4, 132, &tile), 8192.0 / (63 * 132), 1e-12);
  EXPECT_EQ(tile, (TileShape{128, 64}));
}

TEST(AttentionModel, H100ExponentialCostAndFactors) {
  const ModelGpu gpu = h100();
  EXPECT_EQ(gpu.sm_count, 132);
  EXPECT_EQ(gpu.compute_capability, 90);
  EXPECT_NEAR(gpu.flop_per_exp, 256, 0.01);  // 4,096 FLOP per SM per clock / 16 exps

  const LayoutPrediction p = predict_layout({4096, 32, 32, 1}, 1, 4096, false, GemmDtype::bf16, gpu);
  ASSERT_TRUE(p.feasible);
  // The fitted share of an exp's 256 FLOPs that the matmuls do not hide.
  const double exposed = gpu.fit.exp_exposed * 256;
  EXPECT_NEAR(factor(p.fused_fwd.factors, "exponentials").value, 512.0 / (512 + exposed), 1e-4);
  EXPECT_NEAR(factor(p.fused_bwd.factors, "exponentials").value, 1280.0 / (1280 + exposed), 1e-4);
  // 1 x 32 heads x 32 query tiles = 1,024 CTAs in 8 waves of 132.
  EXPECT_NEAR(factor(p.fused_fwd.factors, "sm_fill").value, 1024.0 / 1056, 1e-12);
  EXPECT_NEAR(p.fused_fwd.efficiency, 1024.0 / 1056 * 512 / (512 + exposed) * gpu.fit.fwd_ceiling, 1e-4);
  EXPECT_NEAR(p.fused_bwd.efficiency, 1024.0 / 1056 * 1280 / (1280 + exposed) * gpu.fit.bwd_ceiling, 1e-4);
  // d = 128 is a multiple of 64 and not above 128: no K-depth or large-head loss.
  for (const char* absent : {"k_depth", "large_head_fwd", "large_head_bwd", "causal_diagonal"})
    EXPECT_FALSE(has_factor(p.fused_fwd.factors, absent) || has_factor(p.fused_bwd.factors, absent)) << absent;
  EXPECT_DOUBLE_EQ(p.fused_fwd.flop, attention_forward_flop(p.shape));
}

// As measured on the H200 (tests/reference_models_test.cpp holds the figures):
// small heads lose to the exponentials, large ones in the backward.
TEST(AttentionModel, HeadDim128PredictedFastestAtHidden4096) {
  const ModelGpu gpu = h100();
  for (std::int64_t batch : {1, 4}) {
    auto ms = [&](std::int64_t heads) {
      return predicted_block_ms(predict_layout({4096, heads, heads, 1}, batch, 4096, false, GemmDtype::bf16, gpu), gpu);
    };
    EXPECT_LT(ms(32), ms(16)) << batch;
    EXPECT_LT(ms(32), ms(64)) << batch;
  }
}

TEST(AttentionModel, KDepthAndLargeHeadsAtD160) {
  const LayoutPrediction p = predict_layout({5120, 32, 8, 1}, 2, 4096, true, GemmDtype::bf16, h100());
  // S = Q K^T, half the forward, runs 160 of 192: 1 / (0.5 / (160/192) + 0.5).
  EXPECT_NEAR(factor(p.fused_fwd.factors, "k_depth").value, 1 / (0.5 * 192 / 160 + 0.5), 1e-12);
  EXPECT_NEAR(factor(p.fused_bwd.factors, "k_depth").value, 1 / (0.4 * 192 / 160 + 0.6), 1e-12);
  EXPECT_TRUE(has_factor(p.fused_fwd.factors, "large_head_fwd"));
  EXPECT_TRUE(has_factor(p.fused_bwd.factors, "large_head_bwd"));
  // 32 tiles of 128 on the diagonal: 528 computed, s(s+1)/2 counted.
  EXPECT_NEAR(factor(p.fused_fwd.factors, "causal_diagonal").value, 4096.0 * 4097 / 2 / (528.0 * 128 * 128), 1e-12);
  // The block names the backward's factors apart from the forward's.
  EXPECT_TRUE(has_factor(p.block_factors, "k_depth_bwd"));
}

TEST(AttentionModel, BlockTimeIsItsFlopsAtItsEfficiency) {
  const ModelGpu gpu = h100();
  const LayoutPrediction p = predict_layout({4096, 32, 32, 1}, 4, 4096, false, GemmDtype::bf16, gpu);
  EXPECT_NEAR(predicted_block_ms(p, gpu), p.block_flop / (989.4e12 * p.block_efficiency) * 1e3, 1e-9);
  EXPECT_EQ(predicted_block_ms(predict_layout({4096, 3, 3, 1}, 4, 4096, false, GemmDtype::bf16, gpu), gpu), 0);
  // FP8's efficiencies are shares of the FP8 peak, as the sweep measures them: its exponentials factor
  // already charges an exp at that rate.
  const LayoutPrediction fp8 = predict_layout({4096, 32, 32, 1}, 4, 4096, false, GemmDtype::fp8_e4m3, gpu);
  EXPECT_NEAR(predicted_block_ms(fp8, gpu), fp8.block_flop / (1978.9e12 * fp8.block_efficiency) * 1e3, 1e-9);
}

// The unfused backward's efficiency is of the 2.5x convention's FLOPs; its
// four GEMMs do 2x, so its time is the GEMMs' own at their efficiency.
TEST(AttentionModel, TheUnfusedBackwardIsTimedByTheWorkItDoes) {
  const ModelGpu gpu = h100();
  for (const bool causal : {false, true}) {
    SCOPED_TRACE(causal);
    const LayoutPrediction p = predict_layout({4096, 32, 32, 1}, 4, 4096, causal, GemmDtype::bf16, gpu);
    EXPECT_DOUBLE_EQ(factor(p.unfused_bwd.factors, "no_recompute").value, 1.25);
    double gemm_flop = 0;
    for (const auto& g : unfused_gemms(p.shape, AttentionDirection::backward)) gemm_flop += g.flop();
    const double gemm_efficiency = factor(p.unfused_bwd.factors, "gemm_quantization").value *
                                   factor(p.unfused_bwd.factors, "gemm_ceiling").value;
    // FLOPs over efficiency (the time at the peak): the convention's count at its efficiency is the
    // GEMMs' own count at theirs; causal, the mask's share cancels between count and causal_waste.
    EXPECT_NEAR(p.unfused_bwd.flop / p.unfused_bwd.efficiency, gemm_flop / gemm_efficiency, 1e-9 * gemm_flop);
  }
  EXPECT_FALSE(has_factor(predict_layout({4096, 32, 32, 1}, 4, 4096, false, GemmDtype::bf16, gpu).unfused_fwd.factors,
                          "no_recompute"));
}

TEST(AttentionModel, UnfusedLosesOnKDepthAlignmentAndTheCausalMask) {
  const ModelGpu gpu = h100();
  const LayoutPrediction d80 = predict_layout({5120, 64, 64, 1}, 1, 2048, true, GemmDtype::bf16, gpu);
  // S = Q K^T has K = d = 80: two slices of 64, 62.5% used.
  EXPECT_LT(factor(d80.unfused_fwd.factors, "gemm_quantization").value, 0.7);
  EXPECT_NEAR(factor(d80.unfused_fwd.factors, "causal_waste").value, 2049.0 / 4096, 1e-12);
  // d = 132 (4 x 33): off 16 bytes, and no fused kernel runs it.
  const LayoutPrediction d132 = predict_layout({4224, 32, 32, 1}, 1, 2048, false, GemmDtype::bf16, gpu);
  EXPECT_DOUBLE_EQ(factor(d132.unfused_fwd.factors, "alignment").value, 0.6);
  EXPECT_EQ(d132.fused_fwd.efficiency, 0);
  EXPECT_GT(d132.block_efficiency, 0);  // runs unfused
  EXPECT_CONTAINS(factor(d132.block_factors, "no_fused_kernel").why, "multiple of 8");
  // FP8: no unfused path.
  const LayoutPrediction fp8 = predict_layout({4096, 32, 32, 1}, 1, 2048, false, GemmDtype::fp8_e4m3, gpu);
  EXPECT_EQ(fp8.unfused_fwd.efficiency, 0);
  EXPECT_GT(fp8.fused_fwd.efficiency, 0);
  EXPECT_GT(fp8.fused_bwd.efficiency, 0);  // d = 128: cuDNN's one FP8 backward on Hopper
}

TEST(AttentionModel, InfeasibleLayoutPredictsNothing) {
  const LayoutPrediction p = predict_layout({4096, 48, 48, 1}, 1, 1024, false, GemmDtype::bf16, h100());
  EXPECT_FALSE(p.feasible);
  EXPECT_EQ(p.block_efficiency, 0);
  EXPECT_THROW(predict_layout({4096, 32, 32, 1}, 0, 1024, false, GemmDtype::bf16, h100()), std::invalid_argument);
}

TEST(AttentionModel, ProjectionGemmsPerGpu) {
  const auto fwd = projection_gemms({4096, 32, 8, 2}, 2, 1024, AttentionDirection::forward);
  ASSERT_EQ(fwd.size(), 2u);
  EXPECT_EQ(fwd[0].m, 2048);
  EXPECT_EQ(fwd[0].n, (16 + 2 * 4) * 128);  // a_q / T + 2 a_kv / T heads of 128
  EXPECT_EQ(fwd[0].k, 4096);
  EXPECT_EQ(fwd[1].k, 16 * 128);
  EXPECT_EQ(projection_gemms({4096, 32, 8, 2}, 2, 1024, AttentionDirection::backward).size(), 4u);
}

// ---- ranking ----

TEST(LayoutRanking, BestFirstWithTheFactorsThatCostEachPlace) {
  const std::vector<RankCandidate> candidates = {
      {"d=64", 1.6, {{"exponentials", 0.5, "exp-bound"}, {"sm_fill", 0.97, "fill"}}},
      {"d=128", 1.0, {{"exponentials", 0.8, "less exp"}, {"sm_fill", 0.97, "fill"}}},
      {"d=132", 0, {{"no_fused_kernel", 1, "cuDNN needs multiples of 8"}}},
      {"d=128 again", 1.0, {{"exponentials", 0.8, "less exp"}}},
  };
  const auto ranked = rank_layouts(candidates);
  ASSERT_EQ(ranked.size(), 4u);
  EXPECT_EQ(ranked[0].index, 1u);
  EXPECT_EQ(ranked[0].rank, 1);
  EXPECT_EQ(ranked[1].index, 3u);
  EXPECT_EQ(ranked[1].rank, 1);  // a tie shares the rank
  EXPECT_EQ(ranked[2].index, 0u);
  EXPECT_EQ(ranked[2].rank, 3);
  EXPECT_NEAR(ranked[2].slower, 0.6, 1e-12);  // time over the best's
  ASSERT_EQ(ranked[2].reasons.size(), 1u);  // sm_fill equals the best's: no reason
  EXPECT_CONTAINS(ranked[2].reasons[0], "exponentials 50.0% against 80.0%");
  EXPECT_EQ(ranked[3].index, 2u);
  EXPECT_TRUE(std::isinf(ranked[3].slower));
  EXPECT_EQ(ranked[3].rank, 0);  // no place
  EXPECT_CONTAINS(ranking_verdict(ranked[3]), "cannot run: no_fused_kernel: cuDNN needs multiples of 8");
  EXPECT_EQ(ranking_verdict(ranked[0]), "best");
  EXPECT_CONTAINS(ranking_verdict(ranked[2]), "60.0% slower: exponentials");
  EXPECT_THROW(rank_layouts({}), std::invalid_argument);
}

// Where no layout runs (FP8 at head sizes with no FP8 kernel), none is best.
TEST(LayoutRanking, WhereNoneRunsNoneIsBest) {
  const auto ranked = rank_layouts({{"d=64", 0, {{"no_fused_kernel", 0, "no FP8 backward at d = 64"}}},
                                    {"d=32", 0, {{"no_fused_kernel", 0, "no FP8 backward at d = 32"}}}});
  for (const auto& r : ranked) {
    EXPECT_EQ(r.rank, 0);
    EXPECT_EQ(ranking_verdict(r).rfind("cannot run: no_fused_kernel: no FP8 backward at d = ", 0), 0u)
        << ranking_verdict(r);
  }
}

// ---- the CPU reference ----

namespace {

std::vector<double> random_tensor(std::int64_t n, std::uint64_t seed) {
  std::vector<double> t(static_cast<std::size_t>(n));
  std::uint64_t i = seed << 32;
  for (auto& x : t) x = static_cast<double>(splitmix64(i++) >> 11) / 9007199254740992.0 * 2 - 1;
  return t;
}

// L = sum(O * dO): its gradients are what the backward reference returns.
double loss(const AttentionShape& s, const std::vector<double>& q, const std::vector<double>& k,
            const std::vector<double>& v, const std::vector<double>& d_o) {
  const auto o = attention_forward_reference(s, q, k, v).o;
  double sum = 0;
  for (std::size_t i = 0; i < o.size(); ++i) sum += o[i] * d_o[i];
  return sum;
}

// Central differences of L over every element of `x` (one of q, k, v).
std::vector<double> numeric_gradient(const AttentionShape& s, std::vector<double>& x, std::vector<double>& q,
                                     std::vector<double>& k, std::vector<double>& v, const std::vector<double>& d_o) {
  const double eps = 1e-6;
  std::vector<double> g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + eps;
    const double up = loss(s, q, k, v, d_o);
    x[i] = saved - eps;
    const double down = loss(s, q, k, v, d_o);
    x[i] = saved;
    g[i] = (up - down) / (2 * eps);
  }
  return g;
}

}  // namespace

TEST(AttentionReference, ForwardOnHandCases) {
  // One key: every query reads exactly V.
  const AttentionShape one = shape_of(1, 1, 1, 1, 2);
  EXPECT_EQ(attention_forward_reference(one, {3, 4}, {1, 2}, {5, -6}).o, (std::vector<double>{5, -6}));
  // Q = 0: equal scores, O is the mean of V's rows; causal row 0 sees V[0].
  const AttentionShape two = shape_of(1, 2, 1, 1, 2);
  const std::vector<double> q(4, 0.0), k = {1, 2, 3, 4}, v = {2, 4, 6, 8};
  const auto full = attention_forward_reference(two, q, k, v);
  EXPECT_EQ(full.o, (std::vector<double>{4, 6, 4, 6}));
  EXPECT_NEAR(full.lse[0], std::log(2.0), 1e-15);
  AttentionShape causal = two;
  causal.causal = true;
  EXPECT_EQ(attention_forward_reference(causal, q, k, v).o, (std::vector<double>{2, 4, 4, 6}));
  EXPECT_THROW(attention_forward_reference(two, q, k, {1}), std::invalid_argument);
}

TEST(AttentionReference, BackwardMatchesFiniteDifferences) {
  for (const AttentionShape& s :
       {shape_of(1, 5, 2, 2, 4), shape_of(2, 4, 4, 2, 3), shape_of(1, 6, 3, 1, 4, true), shape_of(2, 3, 2, 1, 2, true)}) {
    auto q = random_tensor(query_elements(s), 1), k = random_tensor(kv_elements(s), 2);
    auto v = random_tensor(kv_elements(s), 3);
    const auto d_o = random_tensor(query_elements(s), 4);
    const AttentionGradients g = attention_backward_reference(s, q, k, v, d_o);
    const auto dq = numeric_gradient(s, q, q, k, v, d_o);
    const auto dk = numeric_gradient(s, k, q, k, v, d_o);
    const auto dv = numeric_gradient(s, v, q, k, v, d_o);
    EXPECT_LT(relative_error(g.dq, dq).relative, 1e-7) << describe(s);
    EXPECT_LT(relative_error(g.dk, dk).relative, 1e-7) << describe(s);
    EXPECT_LT(relative_error(g.dv, dv).relative, 1e-7) << describe(s);
  }
}

TEST(AttentionReference, RelativeErrorFailsNonFinite) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const TensorError e = relative_error({1, nan}, {1, 1});
  EXPECT_EQ(e.nonfinite, 1);
  EXPECT_TRUE(std::isinf(e.relative));
  EXPECT_FALSE(within_tolerance(e, 1e9));
  EXPECT_NEAR(relative_error({1, 1.1}, {1, 1}).relative, 0.1 / std::sqrt(2.0), 1e-12);
  EXPECT_TRUE(within_tolerance(relative_error({0, 0}, {0, 0}), 0));
  EXPECT_FALSE(within_tolerance(relative_error({1e-9}, {0}), 1));
  EXPECT_THROW(relative_error({1}, {1, 2}), std::invalid_argument);
}

// ---- the sampled group check ----

namespace {

// One KV group's tensors for batch 0, group 0, from full BHSD tensors (with
// batch 1 and a_kv 1 the group is the whole tensor).
GroupTensors reference_group(const AttentionShape& s) {
  GroupTensors t;
  t.q = random_tensor(query_elements(s), 11), t.k = random_tensor(kv_elements(s), 12);
  t.v = random_tensor(kv_elements(s), 13), t.d_o = random_tensor(query_elements(s), 14);
  const AttentionForward f = attention_forward_reference(s, t.q, t.k, t.v);
  const AttentionGradients g = attention_backward_reference(s, t.q, t.k, t.v, t.d_o);
  t.o = f.o, t.lse = f.lse, t.dq = g.dq, t.dk = g.dk, t.dv = g.dv;
  return t;
}

}  // namespace

TEST(GroupCheck, SpreadIndices) {
  EXPECT_EQ(spread_indices(10, 3), (std::vector<std::int64_t>{0, 4, 9}));
  EXPECT_EQ(spread_indices(3, 8), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(spread_indices(5, 1), (std::vector<std::int64_t>{0}));
  EXPECT_TRUE(spread_indices(0, 4).empty());
}

TEST(GroupCheck, TheReferencePassesEveryRowAndSamples) {
  for (const AttentionShape& s : {shape_of(1, 7, 3, 1, 4), shape_of(1, 9, 2, 1, 8, true)}) {
    const GroupTensors t = reference_group(s);
    for (std::int64_t samples : {1000, 3}) {
      const GroupCheck c = check_group(s, t, true, samples, samples);
      EXPECT_EQ(c.query_rows, std::min<std::int64_t>(samples, s.heads * s.seq)) << describe(s);
      for (const TensorError& e : {c.o, c.lse, c.dq, c.dk, c.dv}) EXPECT_LT(e.relative, 1e-12) << describe(s);
    }
  }
}

TEST(GroupCheck, CatchesAWrongElementInEachTensor) {
  const AttentionShape s = shape_of(1, 6, 2, 1, 4, true);
  const GroupTensors good = reference_group(s);
  auto wrong_by = [&](std::vector<double> GroupTensors::*tensor, std::size_t index) {
    GroupTensors t = good;
    (t.*tensor)[index] += 0.5;
    return check_group(s, t, true, 1000, 1000);
  };
  EXPECT_GT(wrong_by(&GroupTensors::o, 5).o.relative, 1e-3);
  EXPECT_GT(wrong_by(&GroupTensors::lse, 2).lse.relative, 1e-3);
  EXPECT_GT(wrong_by(&GroupTensors::dq, 30).dq.relative, 1e-3);
  EXPECT_GT(wrong_by(&GroupTensors::dk, 0).dk.relative, 1e-3);
  EXPECT_GT(wrong_by(&GroupTensors::dv, 23).dv.relative, 1e-3);
  // A wrong LSE row that is not sampled still moves dK and dV.
  GroupTensors t = good;
  t.lse[4] += 0.5;
  const GroupCheck c = check_group(s, t, true, 1, 1000);
  EXPECT_LT(c.lse.relative, 1e-12);
  EXPECT_GT(c.dv.relative, 1e-3);
  GroupTensors nan = good;
  nan.o[0] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(check_group(s, nan, false).o.nonfinite, 1);
  EXPECT_THROW(check_group(s, GroupTensors{}, false), std::invalid_argument);
}

// ---- the sweep's conclusions ----

namespace {

Row measured(const std::string& heads, const std::string& batch, const std::string& path, const std::string& direction,
             double time_us, double tflops, const std::string& status = "ok") {
  Row row;
  row.param("hidden", "4096").param("heads", heads).param("kv_heads", heads).param("tp", "1");
  row.param("head_dim", std::to_string(4096 / std::stoi(heads))).param("batch", batch).param("seq", "4096");
  row.param("causal", "no").param("dtype", "bf16").param("path", path).param("direction", direction);
  row.status = *parse_row_status(status);
  if (status == "ok") row.metric("time_us", time_us).metric("tflops", tflops);
  else row.note = "cuDNN check_support: not supported";
  return row;
}

// One layout's parts at one batch: projections and both paths, fwd and bwd.
void add_layout(std::vector<Row>& rows, const std::string& heads, const std::string& batch, double cudnn_tflops) {
  rows.push_back(measured(heads, batch, "projections", "fwd", 100, 500));
  rows.push_back(measured(heads, batch, "projections", "bwd", 200, 500));
  rows.push_back(measured(heads, batch, "unfused", "fwd", 400, 100));
  rows.push_back(measured(heads, batch, "unfused", "bwd", 1000, 100));
  rows.push_back(measured(heads, batch, "cudnn", "fwd", 100, cudnn_tflops));
  rows.push_back(measured(heads, batch, "cudnn", "bwd", 250, cudnn_tflops));
}

}  // namespace

TEST(AttentionSweep, BlockRowsSumThePartsTimes) {
  std::vector<Row> rows;
  add_layout(rows, "32", "1", 400);
  const std::vector<Row> blocks = attention_block_rows(rows);
  ASSERT_EQ(blocks.size(), 4u);  // unfused and cudnn, fwd and train
  const Row* train = nullptr;
  for (const Row& b : blocks)
    if (b.param_value("path") == "block_cudnn" && b.param_value("direction") == "train") train = &b;
  ASSERT_NE(train, nullptr);
  // 100 + 100 + 200 + 250 us; FLOPs: 500e12 x 300e-6 + 400e12 x 350e-6.
  EXPECT_DOUBLE_EQ(*train->metric_value("time_us"), 650);
  EXPECT_NEAR(*train->metric_value("tflops"), (500e12 * 300e-6 + 400e12 * 350e-6) / 650e-6 / 1e12, 1e-9);
  EXPECT_EQ(train->param_value("heads"), "32");

  // A part that did not run ok makes no block.
  rows[5].status = RowStatus::skipped;
  EXPECT_EQ(attention_block_rows(rows).size(), 3u);
}

TEST(AttentionSweep, RecommendationRanksTheBlocksAtTheLargestBatchWithReasons) {
  std::vector<Row> rows;
  add_layout(rows, "32", "1", 400);
  add_layout(rows, "64", "1", 300);
  add_layout(rows, "32", "2", 450);
  add_layout(rows, "64", "2", 350);
  // d = 64's cuDNN backward refused at batch 2: its block runs unfused.
  rows.back() = measured("64", "2", "cudnn", "bwd", 0, 0, "skipped");
  for (Row& b : attention_block_rows(rows)) rows.push_back(std::move(b));
  const ModelGpu gpu = h100();
  const std::vector<LayoutPrediction> predictions = {
      predict_layout({4096, 32, 32, 1}, 2, 4096, false, GemmDtype::bf16, gpu),
      predict_layout({4096, 64, 64, 1}, 2, 4096, false, GemmDtype::bf16, gpu)};
  const auto lines = attention_recommendation(rows, predictions);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].first, "recommend");
  EXPECT_CONTAINS(lines[0].second, "a_q=32 a_kv=32 d=128 on cudnn");
  EXPECT_CONTAINS(lines[0].second, "forward + backward, batch 2");
  EXPECT_EQ(lines[1].first, "rank 2");
  EXPECT_CONTAINS(lines[1].second, "a_q=64 a_kv=64 d=64 on unfused");
  EXPECT_CONTAINS(lines[1].second, "slower");
  EXPECT_CONTAINS(lines[1].second, "cudnn_missing: cuDNN bwd skipped");
  EXPECT_CONTAINS(lines[1].second, "exponentials");
  int ranked = 0;
  for (const Row& r : rows)
    if (r.metric_value("rank")) {
      ++ranked;
      EXPECT_EQ(r.param_value("batch"), "2");
    }
  EXPECT_EQ(ranked, 2);
  std::vector<Row> none;
  EXPECT_TRUE(attention_recommendation(none, predictions).empty());
}

// Where the model has no factor for a loss, the measured part that lost is
// the reason: here d = 256's backward, while its forward is the fastest.
TEST(AttentionSweep, TheMeasuredPartThatLostIsAReason) {
  std::vector<Row> rows;
  add_layout(rows, "32", "1", 500);
  add_layout(rows, "16", "1", 500);
  for (Row& r : rows)
    if (r.param_value("heads") == "16" && r.param_value("path") == "cudnn")
      r = r.param_value("direction") == "fwd" ? measured("16", "1", "cudnn", "fwd", 100 * 500 / 550.0, 550)
                                               : measured("16", "1", "cudnn", "bwd", 250 * 500 / 300.0, 300);
  for (Row& b : attention_block_rows(rows)) rows.push_back(std::move(b));
  const auto lines = attention_recommendation(rows, {});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_CONTAINS(lines[0].second, "a_q=32 a_kv=32 d=128 on cudnn");
  EXPECT_EQ(lines[1].first, "rank 2");
  EXPECT_CONTAINS(lines[1].second,
                  "attention bwd 60.0% against 100.0%: measured cudnn 300.0 TFLOPS, the fastest layout's 500.0");
  EXPECT_EQ(lines[1].second.find("attention fwd"), std::string::npos) << "its forward is faster";
  EXPECT_EQ(lines[1].second.find("no single factor"), std::string::npos);
}

// A layout whose parts did not all run has no block: it is named, with the
// reason, not silently left out of the ranking.
TEST(AttentionSweep, ALayoutWithoutABlockIsNamedWithTheReason) {
  std::vector<Row> rows;
  add_layout(rows, "32", "1", 400);
  add_layout(rows, "64", "1", 300);
  // d = 64: neither path's backward ran, so it has a forward block only.
  for (Row& r : rows)
    if (r.param_value("heads") == "64" && r.param_value("direction") == "bwd" && r.param_value("path") != "projections")
      r = measured("64", "1", *r.param_value("path"), "bwd", 0, 0, "oom");
  for (Row& b : attention_block_rows(rows)) rows.push_back(std::move(b));
  const auto lines = attention_recommendation(rows, {});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].first, "recommend");
  EXPECT_CONTAINS(lines[0].second, "a_q=32");
  EXPECT_EQ(lines[1].first, "not ranked");
  EXPECT_CONTAINS(lines[1].second, "a_q=64 a_kv=64 d=64: no forward + backward block (unfused bwd oom");

  // A path refused up front (no direction: FP8 on the unfused path) comes
  // first in the rows but says less than the part that failed.
  Row refused = measured("64", "1", "unfused", "", 0, 0, "skipped");
  refused.note = "the unfused path runs bf16 and fp16 only";
  rows.insert(rows.begin(), refused);
  const auto again = attention_recommendation(rows, {});
  ASSERT_EQ(again.size(), 2u);
  EXPECT_CONTAINS(again[1].second, "(unfused bwd oom");
}

TEST(AttentionSweep, SaturationOverBatchTimesHeads) {
  std::vector<Row> rows;
  const std::vector<std::pair<int, double>> curve = {{1, 200}, {2, 380}, {4, 400}, {8, 405}, {16, 406}};
  for (const auto& [batch, tflops] : curve) rows.push_back(measured("32", std::to_string(batch), "cudnn", "fwd", 10, tflops));
  rows.push_back(measured("32", "1", "projections", "fwd", 10, 500));  // not attention: no series
  for (const auto& [batch, tflops] : curve)  // one unfused GEMM alone, per batch: a part, no series
    rows.push_back(measured("32", std::to_string(batch), "unfused_gemm", "fwd", 5, tflops / 2));
  const auto lines = attention_saturation(rows);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].first, "saturation a_q=32 a_kv=32 d=128 cudnn fwd");
  // 128 = batch 4 x 32 heads: the first from which no larger gains more than
  // 5% (from 64, 406 is 6.8% more), and above 90% of the best.
  EXPECT_CONTAINS(lines[0].second, "batch x heads = 128 (400.0 TFLOPS)");
  rows.resize(1);
  EXPECT_TRUE(attention_saturation(rows).empty());  // one batch: no curve
}
