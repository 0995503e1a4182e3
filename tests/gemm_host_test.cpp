// gemm_bench's host-side logic against hand-computed cases: dtypes and
// layouts, the GEMMs of a transformer step and the padding worth trying, the
// peak search's shapes, the sweep's quantization-loss analysis, row lookups
// and NVML without a driver.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/core/environment.hpp"
#include "harness/gpu/gemm_dtype.hpp"
#include "harness/gpu/gemm_model.hpp"
#include "harness/gpu/kernel_category.hpp"
#include "harness/gemm/gemm_peak_search.hpp"
#include "harness/gemm/gemm_sweep_analysis.hpp"
#include "harness/report/report.hpp"
#include "harness/gemm/transformer_gemms.hpp"
#include "harness/core/usage_error.hpp"

using namespace redline;

namespace {

// --- dtypes and layouts -------------------------------------------------------

TEST(GemmDtype, ParsesEveryNameAndTheFp8Alias) {
  EXPECT_EQ(parse_gemm_dtype("fp32"), GemmDtype::fp32);
  EXPECT_EQ(parse_gemm_dtype("tf32"), GemmDtype::tf32);
  EXPECT_EQ(parse_gemm_dtype("fp16"), GemmDtype::fp16);
  EXPECT_EQ(parse_gemm_dtype("bf16"), GemmDtype::bf16);
  EXPECT_EQ(parse_gemm_dtype("fp8"), GemmDtype::fp8_e4m3);
  EXPECT_EQ(parse_gemm_dtype("fp8_e4m3"), GemmDtype::fp8_e4m3);
  EXPECT_EQ(parse_gemm_dtype("fp8_e4m3_e5m2"), GemmDtype::fp8_e4m3_e5m2);
  EXPECT_EQ(parse_gemm_dtype("fp64"), std::nullopt);
  EXPECT_EQ(parse_gemm_dtype(""), std::nullopt);
  EXPECT_EQ(parse_gemm_dtype("bf16 "), std::nullopt);
  EXPECT_EQ(parse_gemm_dtype("all"), std::nullopt);  // only the list parser knows "all"
  for (GemmDtype d : all_gemm_dtypes()) EXPECT_EQ(parse_gemm_dtype(gemm_dtype_info(d).name), d);
}

TEST(GemmDtype, InfoMatchesItsDtypeAndStorage) {
  ASSERT_EQ(all_gemm_dtypes().size(), 6u);
  const std::vector<GemmDtype> expected = {GemmDtype::fp32, GemmDtype::tf32,     GemmDtype::fp16,
                                           GemmDtype::bf16, GemmDtype::fp8_e4m3, GemmDtype::fp8_e4m3_e5m2};
  EXPECT_EQ(all_gemm_dtypes(), expected);
  for (GemmDtype d : all_gemm_dtypes()) EXPECT_EQ(gemm_dtype_info(d).dtype, d);

  EXPECT_STREQ(gemm_dtype_info(GemmDtype::bf16).name, "bf16");
  EXPECT_STREQ(gemm_dtype_info(GemmDtype::fp8_e4m3_e5m2).name, "fp8_e4m3_e5m2");
  EXPECT_EQ(gemm_dtype_info(GemmDtype::fp32).a_bytes, 4);
  EXPECT_EQ(gemm_dtype_info(GemmDtype::tf32).c_bytes, 4);
  EXPECT_EQ(gemm_dtype_info(GemmDtype::bf16).b_bytes, 2);
  EXPECT_EQ(gemm_dtype_info(GemmDtype::fp8_e4m3).a_bytes, 1);
  EXPECT_EQ(gemm_dtype_info(GemmDtype::fp8_e4m3).b_bytes, 1);
  EXPECT_EQ(gemm_dtype_info(GemmDtype::fp8_e4m3).c_bytes, 2);  // fp8 writes bf16
  EXPECT_EQ(gemm_dtype_info(GemmDtype::fp8_e4m3_e5m2).c_bytes, 2);
  EXPECT_EQ(gemm_dtype_info(GemmDtype::tf32).peak, PeakDtype::tf32);
  EXPECT_EQ(gemm_dtype_info(GemmDtype::fp8_e4m3_e5m2).peak, PeakDtype::fp8);
}

TEST(GemmDtype, TolerancesFollowTheRoundingOfEachType) {
  const double fp32 = gemm_dtype_info(GemmDtype::fp32).tolerance;
  const double tf32 = gemm_dtype_info(GemmDtype::tf32).tolerance;
  const double fp16 = gemm_dtype_info(GemmDtype::fp16).tolerance;
  const double bf16 = gemm_dtype_info(GemmDtype::bf16).tolerance;
  EXPECT_GT(fp32, 0);
  EXPECT_LT(fp32, fp16);
  EXPECT_LE(fp16, tf32);
  EXPECT_LE(tf32, bf16);
  // A dropped k-block of 64 out of K = 65536 gives 3e-2: no tolerance may hide it.
  for (GemmDtype d : all_gemm_dtypes()) {
    EXPECT_GT(gemm_dtype_info(d).tolerance, 0) << gemm_dtype_info(d).name;
    EXPECT_LT(gemm_dtype_info(d).tolerance, 3e-2) << gemm_dtype_info(d).name;
  }
  // FP8 writes bf16: it cannot be held tighter than bf16 output rounding.
  EXPECT_GE(gemm_dtype_info(GemmDtype::fp8_e4m3).tolerance, bf16);
}

TEST(GemmDtype, ParsesCommaListsInOrderWithoutRepeats) {
  EXPECT_EQ(parse_gemm_dtypes("--dtype", "bf16"), std::vector<GemmDtype>{GemmDtype::bf16});
  EXPECT_EQ(parse_gemm_dtypes("--dtype", "fp16,fp32"), (std::vector<GemmDtype>{GemmDtype::fp16, GemmDtype::fp32}));
  EXPECT_EQ(parse_gemm_dtypes("--dtype", "bf16,fp8"), (std::vector<GemmDtype>{GemmDtype::bf16, GemmDtype::fp8_e4m3}));
  // fp8 and fp8_e4m3 are one dtype: measured once.
  EXPECT_EQ(parse_gemm_dtypes("--dtype", "bf16,fp8,bf16,fp8_e4m3"),
            (std::vector<GemmDtype>{GemmDtype::bf16, GemmDtype::fp8_e4m3}));
  EXPECT_EQ(parse_gemm_dtypes("--dtype", "all"), all_gemm_dtypes());
}

TEST(GemmDtype, UnknownNamesThrowAUsageErrorNamingTheFlag) {
  for (const std::string bad : {"fp64", "bf16,fp64", "", "bf16,", ",bf16", "bf16,,fp16", "BF16x"}) {
    try {
      parse_gemm_dtypes("--dtype", bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_EQ(e.flag(), "--dtype") << bad;
      EXPECT_EQ(e.value(), bad);
      EXPECT_NE(std::string(e.what()).find("--dtype"), std::string::npos) << e.what();
    }
  }
  try {
    parse_gemm_dtypes("--dtype", "bf16,fp64");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("fp64"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bf16"), std::string::npos) << e.what();  // the known names
  }
}

TEST(GemmDtype, KnownNamesListEveryDtypeAndTheAliases) {
  const std::string known = known_gemm_dtypes();
  for (GemmDtype d : all_gemm_dtypes())
    EXPECT_NE(known.find(gemm_dtype_info(d).name), std::string::npos) << known;
  EXPECT_NE(known.find("fp8 "), std::string::npos) << known;
  EXPECT_NE(known.find("all"), std::string::npos) << known;
}

TEST(GemmLayout, ParsesAndNamesEveryLayout) {
  EXPECT_EQ(parse_gemm_layout("tn"), GemmLayout::tn);
  EXPECT_EQ(parse_gemm_layout("nn"), GemmLayout::nn);
  EXPECT_EQ(parse_gemm_layout("nt"), GemmLayout::nt);
  EXPECT_EQ(parse_gemm_layout("tt"), std::nullopt);
  EXPECT_EQ(parse_gemm_layout("TN"), std::nullopt);
  EXPECT_EQ(parse_gemm_layout(""), std::nullopt);
  EXPECT_STREQ(gemm_layout_name(GemmLayout::tn), "tn");
  EXPECT_STREQ(gemm_layout_name(GemmLayout::nn), "nn");
  EXPECT_STREQ(gemm_layout_name(GemmLayout::nt), "nt");
}

TEST(GemmLayout, LeadingDimensions) {
  const LeadingDims tn = leading_dims(GemmLayout::tn, 1000, 2000, 3000);
  EXPECT_EQ(tn.lda, 3000);  // A stored K x M
  EXPECT_EQ(tn.ldb, 3000);  // B stored K x N
  EXPECT_EQ(tn.ldc, 1000);
  const LeadingDims nn = leading_dims(GemmLayout::nn, 1000, 2000, 3000);
  EXPECT_EQ(nn.lda, 1000);  // A stored M x K
  EXPECT_EQ(nn.ldb, 3000);
  EXPECT_EQ(nn.ldc, 1000);
  const LeadingDims nt = leading_dims(GemmLayout::nt, 1000, 2000, 3000);
  EXPECT_EQ(nt.lda, 1000);  // A stored M x K
  EXPECT_EQ(nt.ldb, 2000);  // B stored N x K
  EXPECT_EQ(nt.ldc, 1000);
}

TEST(GemmLayout, DenseBatchesFollowOneAnother) {
  const GemmBatch batch = dense_batch(64, 100, 200, 300);
  EXPECT_EQ(batch.count, 64);
  EXPECT_EQ(batch.stride_a, 100 * 300);  // M x K
  EXPECT_EQ(batch.stride_b, 300 * 200);  // K x N
  EXPECT_EQ(batch.stride_c, 100 * 200);  // M x N
  EXPECT_DOUBLE_EQ(gemm_flop_count(100, 200, 300, 64), 64 * gemm_flop_count(100, 200, 300));
}

TEST(GemmDtype, Fp8NeedsTnAndAlignedKAndM) {
  for (GemmDtype fp8 : {GemmDtype::fp8_e4m3, GemmDtype::fp8_e4m3_e5m2}) {
    const std::string name = gemm_dtype_info(fp8).name;
    EXPECT_EQ(gemm_unsupported_reason(fp8, GemmLayout::tn, 4096, 4096, 4096), std::nullopt) << name;
    // N is no leading dimension in either layout: any N runs.
    EXPECT_EQ(gemm_unsupported_reason(fp8, GemmLayout::tn, 4096, 4097, 4096), std::nullopt) << name;
    EXPECT_EQ(gemm_unsupported_reason(fp8, GemmLayout::tn, 16, 1, 16), std::nullopt) << name;
    EXPECT_EQ(gemm_unsupported_reason(fp8, GemmLayout::tn, 4112, 4097, 4112), std::nullopt) << name;

    for (GemmLayout other : {GemmLayout::nn, GemmLayout::nt}) {
      const auto refused = gemm_unsupported_reason(fp8, other, 4096, 4096, 4096);
      ASSERT_TRUE(refused) << name;
      EXPECT_NE(refused->find("tn"), std::string::npos) << *refused;
      EXPECT_NE(refused->find(name), std::string::npos) << *refused;
    }

    const auto k = gemm_unsupported_reason(fp8, GemmLayout::tn, 4096, 4096, 4104);  // 4104 % 16 = 8
    ASSERT_TRUE(k) << name;
    EXPECT_NE(k->find("4104"), std::string::npos) << *k;
    EXPECT_TRUE(gemm_unsupported_reason(fp8, GemmLayout::tn, 4096, 4096, 4097));

    const auto m = gemm_unsupported_reason(fp8, GemmLayout::tn, 4104, 4096, 4096);  // 4104 % 16 = 8
    ASSERT_TRUE(m) << name;
    EXPECT_NE(m->find("4104"), std::string::npos) << *m;
    EXPECT_TRUE(gemm_unsupported_reason(fp8, GemmLayout::tn, 4097, 4096, 4096));
  }
}

TEST(GemmDtype, OtherDtypesAlwaysRun) {
  for (GemmDtype d : {GemmDtype::fp32, GemmDtype::tf32, GemmDtype::fp16, GemmDtype::bf16})
    for (GemmLayout layout : {GemmLayout::tn, GemmLayout::nn, GemmLayout::nt}) {
      EXPECT_EQ(gemm_unsupported_reason(d, layout, 4096, 4096, 4096), std::nullopt);
      EXPECT_EQ(gemm_unsupported_reason(d, layout, 4097, 4099, 4101), std::nullopt);
      EXPECT_EQ(gemm_unsupported_reason(d, layout, 1, 1, 1), std::nullopt);
    }
}

TEST(GemmDtype, AlignmentNoteNamesTheMisalignedLeadingDimension) {
  EXPECT_EQ(gemm_alignment_note(GemmDtype::bf16, GemmLayout::tn, 4096, 4096, 4096), std::nullopt);
  EXPECT_EQ(gemm_alignment_note(GemmDtype::bf16, GemmLayout::nn, 4096, 4097, 4096), std::nullopt);  // N is free
  // bf16 tn, K = 4100: lda = ldb = K = 8200 bytes, not a multiple of 16; ldc = M fine.
  auto note = gemm_alignment_note(GemmDtype::bf16, GemmLayout::tn, 4096, 4096, 4100);
  ASSERT_TRUE(note);
  EXPECT_NE(note->find("lda=4100"), std::string::npos) << *note;
  EXPECT_NE(note->find("ldb=4100"), std::string::npos) << *note;
  EXPECT_EQ(note->find("ldc"), std::string::npos) << *note;
  // bf16 nn, M = 4100: lda = ldc = M misaligned, ldb = K fine.
  note = gemm_alignment_note(GemmDtype::bf16, GemmLayout::nn, 4100, 4096, 4096);
  ASSERT_TRUE(note);
  EXPECT_NE(note->find("lda=4100"), std::string::npos) << *note;
  EXPECT_NE(note->find("ldc=4100"), std::string::npos) << *note;
  EXPECT_EQ(note->find("ldb"), std::string::npos) << *note;
  // bf16 nt, N = 4100: ldb = N misaligned, M and K fine.
  note = gemm_alignment_note(GemmDtype::bf16, GemmLayout::nt, 4096, 4100, 4096);
  ASSERT_TRUE(note);
  EXPECT_NE(note->find("ldb=4100"), std::string::npos) << *note;
  EXPECT_EQ(note->find("lda"), std::string::npos) << *note;
  // Element size matters: K = 4100 fp32 is 16400 bytes (aligned), K = 4098 is not.
  EXPECT_EQ(gemm_alignment_note(GemmDtype::fp32, GemmLayout::tn, 4096, 4096, 4100), std::nullopt);
  EXPECT_TRUE(gemm_alignment_note(GemmDtype::fp32, GemmLayout::tn, 4096, 4096, 4098));
  EXPECT_TRUE(gemm_alignment_note(GemmDtype::fp16, GemmLayout::tn, 4096, 4096, 4100));
  EXPECT_EQ(gemm_alignment_note(GemmDtype::fp16, GemmLayout::tn, 4096, 4096, 4104), std::nullopt);
}

TEST(GemmDtype, FlopAndByteCounts) {
  EXPECT_DOUBLE_EQ(gemm_flop_count(4096, 4096, 4096), 2.0 * 4096 * 4096 * 4096);
  EXPECT_DOUBLE_EQ(gemm_flop_count(1, 2, 3), 12);
  // No 64-bit overflow on the way: 2 * 2^20 * 2^20 * 2^20 = 2^61.
  EXPECT_DOUBLE_EQ(gemm_flop_count(1 << 20, 1 << 20, 1 << 20), 2.0 * 1099511627776.0 * 1048576.0);
  EXPECT_DOUBLE_EQ(gemm_min_bytes(GemmDtype::bf16, 4096, 4096, 4096), 3.0 * 4096 * 4096 * 2);
  EXPECT_DOUBLE_EQ(gemm_min_bytes(GemmDtype::fp32, 100, 200, 300), 4.0 * (100 * 300 + 300 * 200 + 100 * 200));
  EXPECT_DOUBLE_EQ(gemm_min_bytes(GemmDtype::fp8_e4m3, 100, 200, 300), 100 * 300 + 300 * 200 + 2.0 * 100 * 200);
}

// --- transformer step GEMMs ---------------------------------------------------

TransformerShape small_model() {
  TransformerShape s;
  s.hidden = 1024, s.heads = 16, s.ffn = 4096, s.vocab = 50257, s.seq = 2048, s.micro_batch = 2;
  s.tensor_parallel = 1, s.layers = 24, s.swiglu = false;
  return s;
}

struct Expected {
  const char* layer;
  GemmPass pass;
  std::int64_t m, n, k, count;
};

void expect_gemms(const std::vector<StepGemm>& got, const std::vector<Expected>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("gemm " + std::to_string(i) + " " + want[i].layer + " " + gemm_pass_name(want[i].pass));
    EXPECT_EQ(got[i].layer, want[i].layer);
    EXPECT_EQ(got[i].pass, want[i].pass);
    EXPECT_EQ(got[i].m, want[i].m);
    EXPECT_EQ(got[i].n, want[i].n);
    EXPECT_EQ(got[i].k, want[i].k);
    EXPECT_EQ(got[i].count, want[i].count);
  }
}

constexpr GemmPass F = GemmPass::forward, D = GemmPass::backward_data, W = GemmPass::backward_weight;

TEST(TransformerGemms, OneRankGpt2MediumLikeStep) {
  const TransformerShape s = small_model();
  EXPECT_EQ(s.tokens(), 4096);
  expect_gemms(transformer_step_gemms(s), {
                                              {"qkv", F, 3072, 4096, 1024, 24},
                                              {"qkv", D, 1024, 4096, 3072, 24},
                                              {"qkv", W, 1024, 3072, 4096, 24},
                                              {"attn_out", F, 1024, 4096, 1024, 24},
                                              {"attn_out", D, 1024, 4096, 1024, 24},
                                              {"attn_out", W, 1024, 1024, 4096, 24},
                                              {"ffn_up", F, 4096, 4096, 1024, 24},
                                              {"ffn_up", D, 1024, 4096, 4096, 24},
                                              {"ffn_up", W, 1024, 4096, 4096, 24},
                                              {"ffn_down", F, 1024, 4096, 4096, 24},
                                              {"ffn_down", D, 4096, 4096, 1024, 24},
                                              {"ffn_down", W, 4096, 1024, 4096, 24},
                                              {"logits", F, 50257, 4096, 1024, 1},
                                              {"logits", D, 1024, 4096, 50257, 1},
                                              {"logits", W, 1024, 50257, 4096, 1},
                                          });
}

TEST(TransformerGemms, TwoRanksWithSwiglu) {
  TransformerShape s = small_model();
  s.tensor_parallel = 2, s.swiglu = true, s.vocab = 50304;
  expect_gemms(transformer_step_gemms(s), {
                                              {"qkv", F, 1536, 4096, 1024, 24},
                                              {"qkv", D, 1024, 4096, 1536, 24},
                                              {"qkv", W, 1024, 1536, 4096, 24},
                                              {"attn_out", F, 1024, 4096, 512, 24},
                                              {"attn_out", D, 512, 4096, 1024, 24},
                                              {"attn_out", W, 512, 1024, 4096, 24},
                                              {"ffn_up", F, 2048, 4096, 1024, 24},
                                              {"ffn_up", D, 1024, 4096, 2048, 24},
                                              {"ffn_up", W, 1024, 2048, 4096, 24},
                                              {"ffn_gate", F, 2048, 4096, 1024, 24},
                                              {"ffn_gate", D, 1024, 4096, 2048, 24},
                                              {"ffn_gate", W, 1024, 2048, 4096, 24},
                                              {"ffn_down", F, 1024, 4096, 2048, 24},
                                              {"ffn_down", D, 2048, 4096, 1024, 24},
                                              {"ffn_down", W, 2048, 1024, 4096, 24},
                                              {"logits", F, 25152, 4096, 1024, 1},
                                              {"logits", D, 1024, 4096, 25152, 1},
                                              {"logits", W, 1024, 25152, 4096, 1},
                                          });
}

TEST(TransformerGemms, PassNames) {
  EXPECT_STREQ(gemm_pass_name(GemmPass::forward), "fwd");
  EXPECT_STREQ(gemm_pass_name(GemmPass::backward_data), "bwd_data");
  EXPECT_STREQ(gemm_pass_name(GemmPass::backward_weight), "bwd_weight");
  EXPECT_STREQ(padded_dim_name(PaddedDim::vocab), "vocab");
  EXPECT_STREQ(padded_dim_name(PaddedDim::ffn), "ffn");
  EXPECT_STREQ(padded_dim_name(PaddedDim::hidden), "hidden");
}

TEST(TransformerGemms, EachBackwardPassCostsWhatItsForwardCosts) {
  TransformerShape s = small_model();
  s.tensor_parallel = 2, s.swiglu = true, s.vocab = 50304;
  const auto gemms = transformer_step_gemms(s);
  ASSERT_EQ(gemms.size() % 3, 0u);
  for (std::size_t i = 0; i < gemms.size(); i += 3) {
    ASSERT_EQ(gemms[i].pass, GemmPass::forward);
    const double fwd = step_gemm_flop({gemms[i]});
    EXPECT_DOUBLE_EQ(step_gemm_flop({gemms[i + 1]}), fwd) << gemms[i].layer;
    EXPECT_DOUBLE_EQ(step_gemm_flop({gemms[i + 2]}), fwd) << gemms[i].layer;
    EXPECT_EQ(gemms[i + 1].layer, gemms[i].layer);
    EXPECT_EQ(gemms[i + 2].layer, gemms[i].layer);
  }
}

TEST(TransformerGemms, StepFlopIsSixTimesTokensTimesWeightsPerRank) {
  for (std::int64_t tp : {1, 2, 4})
    for (bool swiglu : {false, true}) {
      TransformerShape s = small_model();
      s.tensor_parallel = tp, s.swiglu = swiglu, s.vocab = 50304;
      const double h = 1024, f = 4096, v = 50304, tokens = 4096, layers = 24;
      // Weights one rank holds: 4 h^2 attention, 2 or 3 h f MLP per layer, h v logits.
      const double weights = (layers * (4 * h * h + (swiglu ? 3 : 2) * h * f) + h * v) / static_cast<double>(tp);
      EXPECT_DOUBLE_EQ(step_gemm_flop(transformer_step_gemms(s)), 6 * tokens * weights) << "tp " << tp;
    }
  EXPECT_DOUBLE_EQ(step_gemm_flop({}), 0);
  EXPECT_DOUBLE_EQ(step_gemm_flop({{"x", GemmPass::forward, 2, 3, 5, 7}}), 2.0 * 2 * 3 * 5 * 7);
}

// Grouped-query attention: Llama-2-70B's layer (hidden 8192, 64 query heads of
// 128, 8 KV heads) over 8 ranks. Q is 8192 wide, K and V 8 x 128 each: the QKV
// projection's output is 10240, 1280 a rank, where MHA's 3H would be 3072 a
// rank (2.4x the FLOPs). The other layers do not change.
TEST(TransformerGemms, GroupedQueryAttentionNarrowsTheQkvProjection) {
  TransformerShape s;
  s.hidden = 8192, s.heads = 64, s.kv_heads = 8, s.ffn = 28672, s.vocab = 32000, s.seq = 4096, s.micro_batch = 1;
  s.tensor_parallel = 8, s.layers = 80, s.swiglu = true;
  const auto gqa = transformer_step_gemms(s);
  ASSERT_EQ(gqa[0].layer, "qkv");
  EXPECT_EQ(gqa[0].m, 1280);  // forward: M = out
  EXPECT_EQ(gqa[1].k, 1280);  // backward data: K = out
  EXPECT_EQ(gqa[2].n, 1280);  // backward weight: N = out
  TransformerShape mha = s;
  mha.kv_heads = 0;  // as many as heads
  const auto full = transformer_step_gemms(mha);
  EXPECT_EQ(full[0].m, 3 * 8192 / 8);
  for (std::size_t i = 3; i < gqa.size(); ++i) {
    EXPECT_EQ(gqa[i].m, full[i].m) << gqa[i].layer;
    EXPECT_EQ(gqa[i].n, full[i].n) << gqa[i].layer;
    EXPECT_EQ(gqa[i].k, full[i].k) << gqa[i].layer;
  }
  // kv_heads equal to heads is MHA.
  mha.kv_heads = 64;
  EXPECT_EQ(transformer_step_gemms(mha)[0].m, 3 * 8192 / 8);
}

void expect_usage_error(const TransformerShape& s, const std::string& flag) {
  try {
    validate_transformer_shape(s);
    ADD_FAILURE() << "accepted a shape that should fail on " << flag;
  } catch (const UsageError& e) {
    EXPECT_EQ(e.flag(), flag) << e.what();
    EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
  }
  EXPECT_THROW(transformer_step_gemms(s), UsageError) << flag;
}

TEST(TransformerGemms, ValidationNamesTheFlag) {
  EXPECT_NO_THROW(validate_transformer_shape(small_model()));
  auto with = [](auto change) {
    TransformerShape s = small_model();
    change(s);
    return s;
  };
  expect_usage_error(with([](TransformerShape& s) { s.hidden = 0; }), "--hidden");
  expect_usage_error(with([](TransformerShape& s) { s.heads = 0; }), "--heads");
  expect_usage_error(with([](TransformerShape& s) { s.ffn = 0; }), "--ffn");
  expect_usage_error(with([](TransformerShape& s) { s.vocab = 0; }), "--vocab");
  expect_usage_error(with([](TransformerShape& s) { s.seq = 0; }), "--seq");
  expect_usage_error(with([](TransformerShape& s) { s.micro_batch = 0; }), "--mbs");
  expect_usage_error(with([](TransformerShape& s) { s.tensor_parallel = 0; }), "--tp");
  expect_usage_error(with([](TransformerShape& s) { s.layers = 0; }), "--layers");
  expect_usage_error(with([](TransformerShape& s) { s.hidden = -1024; }), "--hidden");
  // hidden 1000 / 16 heads: no whole head size.
  expect_usage_error(with([](TransformerShape& s) { s.hidden = 1000; }), "--hidden");
  // 16 heads over 3 ranks.
  expect_usage_error(with([](TransformerShape& s) { s.tensor_parallel = 3, s.vocab = 50256, s.ffn = 4095; }), "--heads");
  // tp 2: ffn 4095 and vocab 50257 are not divisible.
  expect_usage_error(with([](TransformerShape& s) { s.tensor_parallel = 2, s.ffn = 4095, s.vocab = 50304; }), "--ffn");
  expect_usage_error(with([](TransformerShape& s) { s.tensor_parallel = 2; }), "--vocab");
  // 16 query heads cannot share 5 KV heads; 2 KV heads cannot split over 4 ranks.
  expect_usage_error(with([](TransformerShape& s) { s.kv_heads = 5; }), "--kv-heads");
  expect_usage_error(with([](TransformerShape& s) { s.kv_heads = -1; }), "--kv-heads");
  expect_usage_error(with([](TransformerShape& s) { s.kv_heads = 2, s.tensor_parallel = 4, s.vocab = 50304; }),
                     "--kv-heads");
}

TEST(TransformerGemms, PaddingCandidatesForGpt2Vocab) {
  TransformerShape s = small_model();
  // 50257: next multiple of 64 and of 128 is 50304, of 256 is 50432.
  EXPECT_EQ(padding_candidates(s, PaddedDim::vocab), (std::vector<std::int64_t>{50304, 50432}));
  // Already a multiple of 256: nothing to pad to.
  s.vocab = 50432;
  EXPECT_TRUE(padding_candidates(s, PaddedDim::vocab).empty());
  // 50304 is a multiple of 64 and 128 already, not of 256.
  s.vocab = 50304;
  EXPECT_EQ(padding_candidates(s, PaddedDim::vocab), std::vector<std::int64_t>{50432});
  // Two ranks: each rank's share is the multiple, so steps of 128, 256, 512.
  s.tensor_parallel = 2;
  EXPECT_EQ(padding_candidates(s, PaddedDim::vocab), (std::vector<std::int64_t>{50432, 50688}));
}

TEST(TransformerGemms, PaddingCandidatesAreValidLargerAndWithinAQuarter) {
  for (std::int64_t tp : {1, 2, 4, 8})
    for (PaddedDim dim : {PaddedDim::vocab, PaddedDim::ffn, PaddedDim::hidden})
      for (std::int64_t value : {1000, 1200, 5461, 11008, 50257, 50304, 128256}) {
        TransformerShape s = small_model();
        s.tensor_parallel = tp;
        s.vocab = 50304 * 8, s.ffn = 4096 * 8;
        if (dim == PaddedDim::hidden) s.heads = 8;
        s = with_dim(s, dim, value);
        const auto candidates = padding_candidates(s, dim);
        SCOPED_TRACE(std::string(padded_dim_name(dim)) + " " + std::to_string(value) + " tp " + std::to_string(tp));
        EXPECT_TRUE(std::is_sorted(candidates.begin(), candidates.end()));
        EXPECT_EQ(std::set<std::int64_t>(candidates.begin(), candidates.end()).size(), candidates.size());
        for (std::int64_t c : candidates) {
          EXPECT_GT(c, value);
          EXPECT_LE(c, value + value / 4);
          EXPECT_EQ(c % (64 * tp), 0) << c;
          if (dim == PaddedDim::hidden) EXPECT_EQ(c % s.heads, 0) << c;
          EXPECT_NO_THROW(validate_transformer_shape(with_dim(s, dim, c))) << c;
        }
      }
}

TEST(TransformerGemms, PaddingCandidatesCapAtAQuarter) {
  TransformerShape s = small_model();
  s.vocab = 100;  // 128 and 256 are more than 25% above
  EXPECT_TRUE(padding_candidates(s, PaddedDim::vocab).empty());
  s.vocab = 1000;  // 1024 for all three multiples
  EXPECT_EQ(padding_candidates(s, PaddedDim::vocab), std::vector<std::int64_t>{1024});
  s.vocab = 5461;  // 5504 (64, 128), 5632 (256)
  EXPECT_EQ(padding_candidates(s, PaddedDim::vocab), (std::vector<std::int64_t>{5504, 5632}));
  s.ffn = 5461;
  EXPECT_EQ(padding_candidates(s, PaddedDim::ffn), (std::vector<std::int64_t>{5504, 5632}));
  // Exactly 25% above is "at most 25% above".
  s.vocab = 1000;
  EXPECT_EQ(padding_candidates(s, PaddedDim::vocab, 1250), (std::vector<std::int64_t>{1024, 1250}));
  EXPECT_EQ(padding_candidates(s, PaddedDim::vocab, 1251), std::vector<std::int64_t>{1024});
}

TEST(TransformerGemms, HiddenCandidatesKeepAWholeHeadSize) {
  TransformerShape s = small_model();
  s.hidden = 1200, s.heads = 12;  // head size 100
  // lcm(64, 12) = 192 -> 1344; lcm(128, 12) = lcm(256, 12)... -> 1536, over 1500.
  EXPECT_EQ(padding_candidates(s, PaddedDim::hidden), std::vector<std::int64_t>{1344});
  // A hint that breaks the head size is dropped; one that keeps it is kept.
  EXPECT_EQ(padding_candidates(s, PaddedDim::hidden, 1300), std::vector<std::int64_t>{1344});
  EXPECT_EQ(padding_candidates(s, PaddedDim::hidden, 1320), (std::vector<std::int64_t>{1320, 1344}));
  s.hidden = 1024, s.heads = 16;
  EXPECT_TRUE(padding_candidates(s, PaddedDim::hidden).empty());
}

TEST(TransformerGemms, ModelHintIsAddedWhenValidAndInRange) {
  TransformerShape s = small_model();  // vocab 50257, tp 1, limit 62821
  EXPECT_EQ(padding_candidates(s, PaddedDim::vocab, 50688), (std::vector<std::int64_t>{50304, 50432, 50688}));
  EXPECT_EQ(padding_candidates(s, PaddedDim::vocab, 50304), (std::vector<std::int64_t>{50304, 50432}));  // unique
  EXPECT_EQ(padding_candidates(s, PaddedDim::vocab, 70000), (std::vector<std::int64_t>{50304, 50432}));  // > 25%
  EXPECT_EQ(padding_candidates(s, PaddedDim::vocab, 50000), (std::vector<std::int64_t>{50304, 50432}));  // smaller
  EXPECT_EQ(padding_candidates(s, PaddedDim::vocab, 50257), (std::vector<std::int64_t>{50304, 50432}));  // same
  EXPECT_EQ(padding_candidates(s, PaddedDim::vocab, std::nullopt), (std::vector<std::int64_t>{50304, 50432}));
  // Two ranks: a hint not divisible by tp would make an invalid shape.
  s.tensor_parallel = 2, s.vocab = 50304;
  EXPECT_EQ(padding_candidates(s, PaddedDim::vocab, 50305), (std::vector<std::int64_t>{50432, 50688}));
  EXPECT_EQ(padding_candidates(s, PaddedDim::vocab, 50320), (std::vector<std::int64_t>{50320, 50432, 50688}));
}

TEST(TransformerGemms, WithDimAndDimValue) {
  const TransformerShape s = small_model();
  EXPECT_EQ(dim_value(s, PaddedDim::vocab), 50257);
  EXPECT_EQ(dim_value(s, PaddedDim::ffn), 4096);
  EXPECT_EQ(dim_value(s, PaddedDim::hidden), 1024);
  const TransformerShape v = with_dim(s, PaddedDim::vocab, 50304);
  EXPECT_EQ(v.vocab, 50304);
  EXPECT_EQ(v.ffn, 4096);
  EXPECT_EQ(v.hidden, 1024);
  EXPECT_EQ(with_dim(s, PaddedDim::ffn, 4224).ffn, 4224);
  EXPECT_EQ(with_dim(s, PaddedDim::hidden, 1280).hidden, 1280);
  EXPECT_EQ(with_dim(s, PaddedDim::hidden, 1280).vocab, 50257);
}

TEST(TransformerGemms, WhichLayersDependOnWhichDimension) {
  TransformerShape s = small_model();
  s.swiglu = true;
  std::set<std::string> layers;
  for (const auto& g : transformer_step_gemms(s)) layers.insert(g.layer);
  for (const auto& layer : layers) {
    EXPECT_EQ(layer_depends_on(layer, PaddedDim::vocab), layer == "logits") << layer;
    EXPECT_EQ(layer_depends_on(layer, PaddedDim::ffn), layer == "ffn_up" || layer == "ffn_gate" || layer == "ffn_down")
        << layer;
    EXPECT_TRUE(layer_depends_on(layer, PaddedDim::hidden)) << layer;
  }
  // The claim checked against the shapes themselves: changing a dimension
  // changes exactly the GEMMs of the layers said to depend on it.
  for (PaddedDim dim : {PaddedDim::vocab, PaddedDim::ffn, PaddedDim::hidden}) {
    const auto before = transformer_step_gemms(s);
    const auto after = transformer_step_gemms(with_dim(s, dim, dim_value(s, dim) + 64 * 16));
    ASSERT_EQ(before.size(), after.size());
    for (std::size_t i = 0; i < before.size(); ++i) {
      const bool changed = before[i].m != after[i].m || before[i].n != after[i].n || before[i].k != after[i].k;
      EXPECT_EQ(changed, layer_depends_on(before[i].layer, dim)) << before[i].layer << " " << padded_dim_name(dim);
    }
  }
}

// --- peak search --------------------------------------------------------------

TEST(GemmPeakSearch, CoarseShapesAreLargeSquaresAtTwoDepths) {
  const auto shapes = coarse_peak_shapes();
  ASSERT_FALSE(shapes.empty());
  std::set<std::int64_t> mns, ks;
  for (const auto& s : shapes) {
    EXPECT_EQ(s.m, s.n);
    EXPECT_GE(s.m, 4096);
    EXPECT_LE(s.m, 16384);
    mns.insert(s.m);
    ks.insert(s.k);
  }
  EXPECT_EQ(ks, (std::set<std::int64_t>{4096, 8192}));
  EXPECT_TRUE(mns.count(4096) && mns.count(16384));
  EXPECT_EQ(shapes.size(), mns.size() * ks.size());
  EXPECT_EQ(unmeasured(shapes, {}).size(), shapes.size());  // no repeats
}

void expect_wave_aligned(const std::vector<GemmSize>& shapes, const GemmSize& best, TileShape tile, int sms,
                         std::size_t max_shapes) {
  EXPECT_LE(shapes.size(), max_shapes);
  EXPECT_EQ(unmeasured(shapes, {}).size(), shapes.size()) << "repeats";
  for (const auto& s : shapes) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k));
    ASSERT_EQ(s.m % tile.rows, 0);
    ASSERT_EQ(s.n % tile.cols, 0);
    const std::int64_t tiles = (s.m / tile.rows) * (s.n / tile.cols);
    EXPECT_EQ(tiles % sms, 0);
    EXPECT_GE(tiles / sms, 1);
    EXPECT_LE(tiles / sms, 8);
    EXPECT_TRUE(s.k == best.k || s.k == 2 * best.k);
    // The model agrees: no tile or wave quantization loss.
    GemmProblem p;
    p.m = s.m, p.n = s.n, p.k = s.k, p.tile = tile, p.sm_count = sms;
    EXPECT_DOUBLE_EQ(predict_gemm(p).predicted_efficiency, 1.0);
  }
}

TEST(GemmPeakSearch, WaveAlignedShapesFillWholeWaves) {
  const GemmSize best{8192, 8192, 4096};
  const TileShape tile{128, 256};
  const auto shapes = wave_aligned_shapes(best, tile, 132);
  ASSERT_FALSE(shapes.empty());
  expect_wave_aligned(shapes, best, tile, 132, 16);
  EXPECT_EQ(shapes.size(), 16u);  // plenty of factorizations of w * 132 near 64 x 32 tiles
  // Nearest to the best shape's area first.
  const double best_area = 8192.0 * 8192.0;
  auto distance = [&](const GemmSize& s) { return std::abs(std::log(double(s.m) * double(s.n) / best_area)); };
  for (std::size_t i = 1; i < shapes.size(); ++i) EXPECT_LE(distance(shapes[i - 1]), distance(shapes[i]) + 1e-12);
  // Both depths appear.
  EXPECT_TRUE(std::any_of(shapes.begin(), shapes.end(), [](const GemmSize& s) { return s.k == 4096; }));
  EXPECT_TRUE(std::any_of(shapes.begin(), shapes.end(), [](const GemmSize& s) { return s.k == 8192; }));
}

TEST(GemmPeakSearch, WaveAlignedShapesForOtherTilesAndLimits) {
  struct Case {
    GemmSize best;
    TileShape tile;
    int sms;
    std::size_t max_shapes;
  };
  for (const Case& c : std::vector<Case>{{{4096, 4096, 4096}, {128, 128}, 108, 16},
                                         {{16384, 16384, 8192}, {256, 128}, 132, 40},
                                         {{4096, 8192, 4096}, {64, 256}, 148, 5},
                                         {{256, 256, 1024}, {128, 128}, 132, 16},
                                         {{8192, 8192, 4096}, {128, 256}, 132, 1}}) {
    const auto shapes = wave_aligned_shapes(c.best, c.tile, c.sms, c.max_shapes);
    SCOPED_TRACE(std::to_string(c.best.m) + " tile " + tile_text(c.tile) + " sms " + std::to_string(c.sms));
    expect_wave_aligned(shapes, c.best, c.tile, c.sms, c.max_shapes);
  }
  EXPECT_TRUE(wave_aligned_shapes({8192, 8192, 4096}, {128, 256}, 132, 0).empty());
}

TEST(GemmPeakSearch, WaveAlignedShapesNeedAKnownTileAndSmCount) {
  EXPECT_TRUE(wave_aligned_shapes({8192, 8192, 4096}, {0, 0}, 132).empty());
  EXPECT_TRUE(wave_aligned_shapes({8192, 8192, 4096}, {128, 0}, 132).empty());
  EXPECT_TRUE(wave_aligned_shapes({8192, 8192, 4096}, {0, 256}, 132).empty());
  EXPECT_TRUE(wave_aligned_shapes({8192, 8192, 4096}, {128, 256}, 0).empty());
}

TEST(GemmPeakSearch, NeighbourShapesStepEachDimension) {
  const auto shapes = neighbour_shapes({4096, 8192, 2048});
  const std::vector<GemmSize> expected = {{3840, 8192, 2048}, {4352, 8192, 2048}, {4096, 7936, 2048},
                                          {4096, 8448, 2048}, {4096, 8192, 1792}, {4096, 8192, 2304}};
  EXPECT_EQ(shapes, expected);
  // A dimension is never stepped below the step.
  const auto small = neighbour_shapes({256, 4096, 512});
  const std::vector<GemmSize> expected_small = {{512, 4096, 512}, {256, 3840, 512}, {256, 4352, 512},
                                                {256, 4096, 256}, {256, 4096, 768}};
  EXPECT_EQ(small, expected_small);
  const auto step64 = neighbour_shapes({128, 128, 128}, 64);
  EXPECT_EQ(step64.size(), 6u);
  for (const auto& s : step64) EXPECT_TRUE(s.m >= 64 && s.n >= 64 && s.k >= 64);
}

TEST(GemmPeakSearch, GridIsMOutermost) {
  const auto grid = grid_shapes({1, 2}, {10, 20}, {100, 200, 300});
  ASSERT_EQ(grid.size(), 12u);
  EXPECT_EQ(grid[0], (GemmSize{1, 10, 100}));
  EXPECT_EQ(grid[1], (GemmSize{1, 10, 200}));
  EXPECT_EQ(grid[3], (GemmSize{1, 20, 100}));
  EXPECT_EQ(grid[6], (GemmSize{2, 10, 100}));
  EXPECT_EQ(grid[11], (GemmSize{2, 20, 300}));
  EXPECT_TRUE(grid_shapes({}, {1}, {1}).empty());
}

TEST(GemmPeakSearch, UnmeasuredDropsMeasuredAndRepeatsKeepingOrder) {
  const std::vector<GemmSize> candidates = {{1, 1, 1}, {2, 2, 2}, {1, 1, 1}, {3, 3, 3}, {2, 2, 2}, {4, 4, 4}};
  EXPECT_EQ(unmeasured(candidates, {{3, 3, 3}}), (std::vector<GemmSize>{{1, 1, 1}, {2, 2, 2}, {4, 4, 4}}));
  EXPECT_EQ(unmeasured(candidates, {}), (std::vector<GemmSize>{{1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {4, 4, 4}}));
  EXPECT_TRUE(unmeasured(candidates, candidates).empty());
  EXPECT_TRUE(unmeasured({}, candidates).empty());
}

// --- sweep analysis -----------------------------------------------------------

Row gemm_row(const std::string& dtype, std::int64_t n, std::optional<double> efficiency, std::optional<double> tflops,
             const std::string& status = "ok") {
  Row row;
  row.param("dtype", dtype).param("layout", "tn").param("m", "4096").param("n", std::to_string(n)).param("k", "4096");
  if (tflops) row.metric("tflops", *tflops);
  if (efficiency) row.metric("predicted_efficiency", *efficiency);
  row.status = *parse_row_status(status);
  return row;
}

std::optional<QuantizationLoss> finding_for(const std::vector<QuantizationLoss>& losses, std::size_t row) {
  for (const auto& l : losses)
    if (l.row == row) return l;
  return std::nullopt;
}

TEST(GemmSweepAnalysis, SawtoothOnAnNSweep) {
  // Row order is not n order: the analysis must sort by n itself.
  std::vector<Row> rows = {
      gemm_row("bf16", 4288, 1.0, 690),   // 0: quantization-free, 1.4% below the level
      gemm_row("bf16", 4096, 1.0, 700),   // 1: sets the level
      gemm_row("bf16", 4160, 0.5, 350),   // 2: loses 50%
      gemm_row("bf16", 4224, 0.5, 500),   // 3: loses 28.6%, beats its prediction
      gemm_row("bf16", 4352, 0.5, 350),   // 4: loses 50%, nothing larger recovers
      gemm_row("bf16", 4120, 0.95, 660),  // 5: loses 5.7%: not flagged
  };
  EXPECT_EQ(swept_dimension(rows), "n");
  const auto losses = analyze_gemm_sweep(rows, "n");

  const double level = 700;
  const std::vector<double> tflops = {690, 700, 350, 500, 350, 660};
  const std::vector<double> efficiency = {1.0, 1.0, 0.5, 0.5, 0.5, 0.95};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE("row " + std::to_string(i));
    ASSERT_TRUE(rows[i].metric_value("predicted_tflops"));
    ASSERT_TRUE(rows[i].metric_value("loss_pct"));
    EXPECT_NEAR(*rows[i].metric_value("predicted_tflops"), level * efficiency[i], 1e-9);
    EXPECT_NEAR(*rows[i].metric_value("loss_pct"), 100 * (1 - tflops[i] / level), 1e-9);
  }
  EXPECT_NEAR(*rows[2].metric_value("loss_pct"), 50, 1e-9);
  EXPECT_NEAR(*rows[1].metric_value("loss_pct"), 0, 1e-9);

  ASSERT_EQ(losses.size(), 3u);
  EXPECT_EQ(losses[0].row, 2u);  // row order
  EXPECT_EQ(losses[1].row, 3u);
  EXPECT_EQ(losses[2].row, 4u);
  // n 4160 skips n 4224 (500 is not within 10% of 700) and is recovered by n 4288.
  EXPECT_NEAR(losses[0].loss, 0.5, 1e-12);
  EXPECT_EQ(losses[0].recovered_by, std::optional<std::size_t>(0));
  EXPECT_NEAR(losses[0].measured_gain, 690.0 / 350 - 1, 1e-12);
  EXPECT_NEAR(losses[1].loss, 1 - 500.0 / 700, 1e-12);
  EXPECT_EQ(losses[1].recovered_by, std::optional<std::size_t>(0));
  EXPECT_NEAR(losses[1].measured_gain, 690.0 / 500 - 1, 1e-12);
  EXPECT_NEAR(losses[2].loss, 0.5, 1e-12);
  EXPECT_EQ(losses[2].recovered_by, std::nullopt);
  EXPECT_EQ(losses[2].measured_gain, 0);
}

TEST(GemmSweepAnalysis, EachDtypeIsItsOwnCurve) {
  std::vector<Row> rows = {
      gemm_row("bf16", 4096, 1.0, 700), gemm_row("fp16", 4096, 1.0, 600), gemm_row("fp16", 4160, 0.5, 500),
      gemm_row("bf16", 4160, 0.5, 600), gemm_row("fp16", 4224, 1.0, 560), gemm_row("bf16", 4224, 1.0, 690),
  };
  const auto losses = analyze_gemm_sweep(rows, "n");
  // fp16's level is its own 600: 560 is 6.7% below (not flagged), 500 is 16.7% below.
  EXPECT_NEAR(*rows[4].metric_value("loss_pct"), 100 * (1 - 560.0 / 600), 1e-9);
  EXPECT_NEAR(*rows[2].metric_value("predicted_tflops"), 300, 1e-9);
  EXPECT_NEAR(*rows[3].metric_value("predicted_tflops"), 350, 1e-9);
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_EQ(losses[0].row, 2u);
  EXPECT_NEAR(losses[0].loss, 1 - 500.0 / 600, 1e-12);
  EXPECT_EQ(losses[0].recovered_by, std::optional<std::size_t>(4));  // fp16's own n 4224, not bf16's
  EXPECT_NEAR(losses[0].measured_gain, 560.0 / 500 - 1, 1e-12);
  EXPECT_EQ(losses[1].row, 3u);
  EXPECT_EQ(losses[1].recovered_by, std::optional<std::size_t>(5));
}

TEST(GemmSweepAnalysis, RowsThatAreNotOkAreIgnored) {
  std::vector<Row> rows = {
      gemm_row("bf16", 4096, 1.0, 700),
      gemm_row("bf16", 4160, 0.5, 350),
      gemm_row("bf16", 4224, std::nullopt, std::nullopt, "oom"),
      gemm_row("bf16", 4288, 1.0, 900, "error"),  // would raise the level and recover n 4160
      gemm_row("bf16", 4352, 1.0, 950, "wrong"),  // a wrong result's speed means nothing
      gemm_row("bf16", 4416, 1.0, std::nullopt),  // ok, but no tflops
  };
  const auto losses = analyze_gemm_sweep(rows, "n");
  for (std::size_t i : {2u, 3u, 4u, 5u}) {
    EXPECT_FALSE(rows[i].metric_value("loss_pct")) << i;
    EXPECT_FALSE(rows[i].metric_value("predicted_tflops")) << i;
  }
  EXPECT_NEAR(*rows[1].metric_value("loss_pct"), 50, 1e-9);
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_EQ(losses[0].row, 1u);
  EXPECT_EQ(losses[0].recovered_by, std::nullopt);
}

TEST(GemmSweepAnalysis, ANotMeasuredTflopsIsNoMeasurement) {
  // Row: "NaN = not measured". Such a row is neither flagged nor a recovery.
  std::vector<Row> rows = {gemm_row("bf16", 4096, 1.0, 700), gemm_row("bf16", 4160, 0.5, std::nan("")),
                           gemm_row("bf16", 4224, 0.5, 350)};
  const auto losses = analyze_gemm_sweep(rows, "n");
  EXPECT_FALSE(rows[1].metric_value("loss_pct"));
  EXPECT_FALSE(rows[1].metric_value("predicted_tflops"));
  EXPECT_NEAR(*rows[2].metric_value("loss_pct"), 50, 1e-9);
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_EQ(losses[0].row, 2u);
}

TEST(GemmSweepAnalysis, WithoutAQuantizationFreePointTheBestPointSetsTheLevel) {
  // No point reaches 0.99: the level is the best measured TFLOPS (665) over
  // its predicted efficiency (0.95) = 700, not the largest tflops/efficiency
  // of any point (400 / 0.5 = 800).
  std::vector<Row> rows = {
      gemm_row("bf16", 1000, 0.5, 400),
      gemm_row("bf16", 1100, 0.95, 665),
      gemm_row("bf16", 1200, 0.8, 600),
  };
  const auto losses = analyze_gemm_sweep(rows, "n");
  EXPECT_NEAR(*rows[0].metric_value("predicted_tflops"), 350, 1e-9);
  EXPECT_NEAR(*rows[1].metric_value("predicted_tflops"), 665, 1e-9);
  EXPECT_NEAR(*rows[2].metric_value("predicted_tflops"), 560, 1e-9);
  EXPECT_NEAR(*rows[1].metric_value("loss_pct"), 5, 1e-9);
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_EQ(losses[0].row, 0u);
  EXPECT_NEAR(losses[0].loss, 1 - 400.0 / 700, 1e-12);
  EXPECT_EQ(losses[0].recovered_by, std::optional<std::size_t>(1));
  EXPECT_EQ(losses[1].row, 2u);
  EXPECT_NEAR(losses[1].loss, 1 - 600.0 / 700, 1e-12);
  EXPECT_EQ(losses[1].recovered_by, std::nullopt);
}

TEST(GemmSweepAnalysis, WithoutPredictionsTheBestMeasuredPointSetsTheLevel) {
  std::vector<Row> rows = {gemm_row("bf16", 1000, std::nullopt, 500), gemm_row("bf16", 2000, std::nullopt, 700)};
  const auto losses = analyze_gemm_sweep(rows, "n");
  EXPECT_FALSE(rows[0].metric_value("predicted_tflops"));
  EXPECT_NEAR(*rows[0].metric_value("loss_pct"), 100 * (1 - 500.0 / 700), 1e-9);
  EXPECT_NEAR(*rows[1].metric_value("loss_pct"), 0, 1e-9);
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_EQ(losses[0].row, 0u);
  EXPECT_EQ(losses[0].recovered_by, std::optional<std::size_t>(1));
  EXPECT_NEAR(losses[0].measured_gain, 0.4, 1e-12);
}

TEST(GemmSweepAnalysis, ARepeatOfTheSameSizeDoesNotRecoverIt) {
  // --benchmark_repetitions gives several rows per size; only a larger size recovers.
  std::vector<Row> rows = {gemm_row("bf16", 4096, 1.0, 700), gemm_row("bf16", 4160, 0.5, 350),
                           gemm_row("bf16", 4160, 0.5, 680), gemm_row("bf16", 4224, 1.0, 695)};
  rows[2].repetition = 1;
  const auto losses = analyze_gemm_sweep(rows, "n");
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_EQ(losses[0].row, 1u);
  EXPECT_EQ(losses[0].recovered_by, std::optional<std::size_t>(3));
  EXPECT_NEAR(losses[0].measured_gain, 695.0 / 350 - 1, 1e-12);
}

// The fitted power-cap prediction beside the fixed-clock one, from each row's
// own tile and wave efficiencies, on a level found by the same rule.
TEST(GemmSweepAnalysis, PowerCappedPredictionBesideTheFixedClock) {
  auto with_efficiencies = [](Row row, double tile, double wave) {
    row.metric("tile_efficiency", tile).metric("wave_efficiency", wave);
    return row;
  };
  std::vector<Row> rows = {with_efficiencies(gemm_row("bf16", 4096, 1.0, 700), 1.0, 1.0),
                           with_efficiencies(gemm_row("bf16", 4160, 0.5, 500), 1.0, 0.5),
                           gemm_row("bf16", 4224, 0.9, 650)};  // no tile or wave efficiency
  analyze_gemm_sweep(rows, "n");
  const double capped = 0.5 / (1 - kPowerCapWaveRecovery + kPowerCapWaveRecovery * 0.5);  // 0.699
  EXPECT_NEAR(*rows[1].metric_value("predicted_tflops"), 350, 1e-9);
  EXPECT_NEAR(*rows[1].metric_value("predicted_tflops_power_capped"), 700 * capped, 1e-9);
  EXPECT_NEAR(*rows[0].metric_value("predicted_tflops_power_capped"), 700, 1e-9);
  EXPECT_FALSE(rows[2].metric_value("predicted_tflops_power_capped"));
  EXPECT_NEAR(*rows[1].metric_value("loss_pct"), 100 * (1 - 500.0 / 700), 1e-9);  // the fixed clock's level

  // No quantization-free point: each level is the best point over its own
  // efficiency, 600 / 0.8 = 750 at a fixed clock, 600 / 0.903 at the cap.
  std::vector<Row> unfree = {with_efficiencies(gemm_row("bf16", 1000, 0.8, 600), 1.0, 0.8),
                             with_efficiencies(gemm_row("bf16", 1100, 0.5, 400), 1.0, 0.5)};
  analyze_gemm_sweep(unfree, "n");
  const double capped_best = power_capped_wave_efficiency(0.8);
  EXPECT_NEAR(*unfree[1].metric_value("predicted_tflops"), 750 * 0.5, 1e-9);
  EXPECT_NEAR(*unfree[1].metric_value("predicted_tflops_power_capped"), 600 / capped_best * capped, 1e-9);
  EXPECT_NEAR(*unfree[0].metric_value("predicted_tflops_power_capped"), 600, 1e-9);
}

TEST(GemmSweepAnalysis, OtherSweptDimensions) {
  // An M sweep at two N values: one curve per N.
  std::vector<Row> rows;
  for (std::int64_t n : {4096, 8192})
    for (std::int64_t m : {1024, 1088, 2048}) {
      Row row;
      row.param("dtype", "bf16").param("layout", "tn").param("m", std::to_string(m)).param("n", std::to_string(n));
      row.param("k", "4096");
      const bool aligned = m != 1088;
      row.metric("tflops", (n == 4096 ? 400.0 : 800.0) * (aligned ? 1.0 : 0.5));
      row.metric("predicted_efficiency", aligned ? 1.0 : 0.5);
      rows.push_back(row);
    }
  EXPECT_EQ(swept_dimension(rows), "m");
  const auto losses = analyze_gemm_sweep(rows, "m");
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_EQ(losses[0].row, 1u);
  EXPECT_EQ(losses[0].recovered_by, std::optional<std::size_t>(2));
  EXPECT_NEAR(losses[0].loss, 0.5, 1e-12);
  EXPECT_EQ(losses[1].row, 4u);
  EXPECT_EQ(losses[1].recovered_by, std::optional<std::size_t>(5));
  EXPECT_NEAR(*rows[3].metric_value("predicted_tflops"), 800, 1e-9);
}

Row mnk_row(std::int64_t m, std::int64_t n, std::int64_t k) {
  Row row;
  row.param("dtype", "bf16").param("m", std::to_string(m)).param("n", std::to_string(n)).param("k", std::to_string(k));
  return row;
}

TEST(GemmSweepAnalysis, SweptDimensionHasTheMostDistinctValues) {
  EXPECT_EQ(swept_dimension({}), "n");
  EXPECT_EQ(swept_dimension({mnk_row(1, 1, 1)}), "n");
  EXPECT_EQ(swept_dimension({mnk_row(1, 1, 1), mnk_row(2, 1, 1), mnk_row(3, 1, 1)}), "m");
  EXPECT_EQ(swept_dimension({mnk_row(1, 1, 1), mnk_row(1, 1, 2), mnk_row(1, 1, 3)}), "k");
  EXPECT_EQ(swept_dimension({mnk_row(1, 1, 1), mnk_row(1, 2, 1), mnk_row(1, 3, 1)}), "n");
  // Ties: n, then m.
  EXPECT_EQ(swept_dimension({mnk_row(1, 1, 1), mnk_row(2, 2, 1)}), "n");
  EXPECT_EQ(swept_dimension({mnk_row(1, 1, 1), mnk_row(2, 1, 2)}), "m");
  EXPECT_EQ(swept_dimension({mnk_row(1, 1, 1), mnk_row(2, 2, 2)}), "n");
  // Repeats of one value count once.
  // m: 3 distinct of 4, n: 2 distinct of 4 (counting repeats would tie them at 4 and pick n).
  EXPECT_EQ(swept_dimension({mnk_row(1, 1, 1), mnk_row(1, 1, 1), mnk_row(2, 2, 1), mnk_row(3, 2, 1)}), "m");
}

// --- rows ---------------------------------------------------------------------

TEST(RowLookup, ParamAndMetricValues) {
  Row row;
  row.param("dtype", "bf16").param("m", "4096").metric("tflops", 512.5).metric("wrong", 0);
  EXPECT_EQ(row.param_value("dtype"), std::optional<std::string>("bf16"));
  EXPECT_EQ(row.param_value("m"), std::optional<std::string>("4096"));
  EXPECT_EQ(row.param_value("n"), std::nullopt);
  EXPECT_EQ(row.param_value("tflops"), std::nullopt);  // a metric is no parameter
  EXPECT_EQ(row.metric_value("tflops"), std::optional<double>(512.5));
  EXPECT_EQ(row.metric_value("wrong"), std::optional<double>(0));  // zero is a value
  EXPECT_EQ(row.metric_value("dtype"), std::nullopt);
  EXPECT_EQ(row.metric_value("time_us"), std::nullopt);
  row.param("empty", "");
  EXPECT_EQ(row.param_value("empty"), std::optional<std::string>(""));
  EXPECT_EQ(Row{}.param_value("m"), std::nullopt);
  EXPECT_EQ(Row{}.metric_value("tflops"), std::nullopt);
}

// --- NVML without a driver ----------------------------------------------------

bool nvml_loadable() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return false;
  dlclose(lib);
  return true;
}

TEST(NvmlSession, WithoutADriverSaysWhyAndReadsNothing) {
  const NvmlSession session;
  if (nvml_loadable()) {
    // A driver is here: an unknown UUID still reads as nothing.
    EXPECT_EQ(session.read("GPU-00000000-0000-0000-0000-000000000000"), std::nullopt);
    GTEST_SKIP() << "libnvidia-ml.so.1 loads on this machine";
  }
  ASSERT_TRUE(session.unavailable());
  EXPECT_NE(session.unavailable()->find("libnvidia-ml.so.1"), std::string::npos) << *session.unavailable();
  EXPECT_EQ(session.read("GPU-12345678-1234-1234-1234-123456789abc"), std::nullopt);
  EXPECT_EQ(session.read(""), std::nullopt);
}

TEST(NvmlSession, SlowdownReasonNames) {
  EXPECT_EQ(slowdown_reason_names(0x4 | 0x40), "sw_power_cap+hw_thermal");
  EXPECT_EQ(slowdown_reason_names(0), "");
  EXPECT_EQ(slowdown_reason_names(0x1), "");  // idle is no slowdown
  EXPECT_EQ(slowdown_reason_names(0x2), "");  // an application clock setting is none either
  EXPECT_EQ(slowdown_reason_names(0x8), "hw_slowdown");
  EXPECT_EQ(slowdown_reason_names(0x20), "sw_thermal");
  EXPECT_EQ(slowdown_reason_names(0x80), "power_brake");
  EXPECT_EQ(slowdown_reason_names(0x1 | 0x4), "sw_power_cap");
  EXPECT_EQ(slowdown_reason_names(kSlowdownReasonMask), "sw_power_cap+hw_slowdown+sw_thermal+hw_thermal+power_brake");
}

}  // namespace

// A training step's kernels sorted into GEMMs, attention and the rest by name.
TEST(KernelCategory, ByName) {
  using redline::KernelCategory;
  EXPECT_EQ(redline::kernel_category("nvjet_hsh_128x256_64x4_1x2_h_bz_coopA_NTT"), KernelCategory::gemm);
  EXPECT_EQ(redline::kernel_category("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64"), KernelCategory::gemm);
  EXPECT_EQ(redline::kernel_category("cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64"), KernelCategory::gemm);
  EXPECT_EQ(redline::kernel_category("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3"),
            KernelCategory::attention);
  EXPECT_EQ(redline::kernel_category("cutlass::fmha::kernel::Sm90FmhaFwd"), KernelCategory::attention);
  EXPECT_EQ(redline::kernel_category("void redline::softmax_rows<__nv_bfloat16>(...)"), KernelCategory::attention);
  EXPECT_EQ(redline::kernel_category("void redline::rmsnorm_forward<...>"), KernelCategory::elementwise);
  // Names as real runs printed them (nvvp in pytorch/pytorch#18804, cuda-memcheck, profiler tables and
  // Inductor tracebacks quoted in public repositories): cross-entropy's log-softmax is not attention; split-K
  // reduces, gemv and Inductor's matmul templates are GEMMs, its flex-attention template is attention.
  EXPECT_EQ(redline::kernel_category(
                "void at::native::_GLOBAL__N__53_tmpxft_00009fac_00000000_9_SoftMax_compute_70_cpp1_ii_a3310042::"
                "cunn_SoftMaxBackward<int=2, float, float, float, at::native::_GLOBAL__N__53_tmpxft_00009fac_00000000_9_"
                "SoftMax_compute_70_cpp1_ii_a3310042::LogSoftMaxBackwardEpilogue>(float*, float*, float, int)"),
            KernelCategory::elementwise);
  EXPECT_EQ(redline::kernel_category("void splitKreduce_kernel<__half, __half, __half, __half>(cublasSplitKParams<__half>, "
                                     "__half const *, __half const *, __half*, __half const *, __half const *, "
                                     "__half const *)"),
            KernelCategory::gemm);
  EXPECT_EQ(redline::kernel_category("cublasLt::splitKreduce_kernel"), KernelCategory::gemm);
  EXPECT_EQ(redline::kernel_category("gemv2T_kernel_val"), KernelCategory::gemm);
  EXPECT_EQ(redline::kernel_category("triton_tem_fused__to_copy_addmm_gelu_t_view_9"), KernelCategory::gemm);
  EXPECT_EQ(redline::kernel_category("triton_tem_fused_bmm_7"), KernelCategory::gemm);
  EXPECT_EQ(redline::kernel_category("triton_tem_fused_flex_attention_backward"), KernelCategory::attention);
  EXPECT_EQ(redline::kernel_category("pytorch_flash::flash_fwd_splitkv_kernel"), KernelCategory::attention);
  EXPECT_STREQ(redline::kernel_category_name(KernelCategory::elementwise), "elementwise");
}
