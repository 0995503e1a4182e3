// The attention GPU paths' host-side arithmetic, without a device: the
// unfused path's GEMM shapes (GQA folded into M and K) add up to the FLOP
// convention, and its workspace grows with s^2; the dtype checks.
#include <gtest/gtest.h>

#include <stdexcept>

#include "harness/attention/attention_shape.hpp"
#include "kernels/attention_check.cuh"
#include "kernels/attention_cudnn.cuh"
#include "kernels/attention_unfused.cuh"

namespace {

using redline::AttentionShape;
using redline::GemmDtype;

AttentionShape gqa_shape() {
  AttentionShape shape;
  shape.batch = 2, shape.seq = 1024, shape.heads = 32, shape.kv_heads = 8, shape.head_dim = 128;
  return shape;
}

TEST(AttentionHost, UnfusedGemmsFoldTheKvGroupIntoOneMatrix) {
  const auto gemms = redline::unfused_attention_gemms(gqa_shape(), GemmDtype::bf16);
  ASSERT_EQ(gemms.size(), 6u);
  const auto& scores = gemms[0].problem;  // Q K^T per KV group: (4 * 1024) x 1024 x 128, 16 groups
  EXPECT_EQ(gemms[0].name, "scores");
  EXPECT_EQ(scores.m, 4 * 1024);
  EXPECT_EQ(scores.n, 1024);
  EXPECT_EQ(scores.k, 128);
  EXPECT_EQ(scores.batch, 2 * 8);
  EXPECT_TRUE(scores.transpose_b);
  EXPECT_FLOAT_EQ(scores.alpha, static_cast<float>(redline::softmax_scale(gqa_shape())));
  const auto& grad_k = gemms[5].problem;  // dS^T Q sums the group's 4 heads inside K
  EXPECT_EQ(grad_k.m, 1024);
  EXPECT_EQ(grad_k.k, 4 * 1024);
  EXPECT_TRUE(grad_k.transpose_a);
}

// gemm_bench's name for each GEMM: column-major, so M and N swap and a
// transpose moves to the other operand. d = 128, g*s = 4096, s = 1024,
// 16 groups.
TEST(AttentionHost, EveryUnfusedGemmHasAGemmBenchEquivalent) {
  using redline::GemmLayout;
  struct Expected {
    GemmLayout layout;
    std::int64_t m, n, k;
  };
  const Expected expected[] = {
      {GemmLayout::tn, 1024, 4096, 128},   // scores: S^T = K Q^T
      {GemmLayout::nn, 128, 4096, 1024},   // output: O^T = V^T P^T
      {GemmLayout::nt, 128, 1024, 4096},   // grad_v: dV^T = dO^T P
      {GemmLayout::tn, 1024, 4096, 128},   // grad_p: dP^T = V dO^T
      {GemmLayout::nn, 128, 4096, 1024},   // grad_q: dQ^T = K^T dS^T
      {GemmLayout::nt, 128, 1024, 4096}};  // grad_k: dK^T = Q^T dS
  const auto gemms = redline::unfused_attention_gemms(gqa_shape(), GemmDtype::bf16);
  ASSERT_EQ(gemms.size(), 6u);
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    SCOPED_TRACE(gemms[i].name);
    const auto equivalent = redline::column_major_equivalent(gemms[i].problem);
    ASSERT_TRUE(equivalent);
    EXPECT_EQ(equivalent->layout, expected[i].layout);
    EXPECT_EQ(equivalent->m, expected[i].m);
    EXPECT_EQ(equivalent->n, expected[i].n);
    EXPECT_EQ(equivalent->k, expected[i].k);
    EXPECT_EQ(equivalent->batch, 16);
    // The same FLOPs, and the same dense strides the path's tensors have.
    EXPECT_DOUBLE_EQ(redline::gemm_flop_count(equivalent->m, equivalent->n, equivalent->k, equivalent->batch),
                     redline::matmul_flop_count(gemms[i].problem));
    const redline::GemmBatch strides = equivalent->strides();
    EXPECT_EQ(strides.stride_a, gemms[i].problem.stride_b);  // gemm_bench's A is the row-major B
    EXPECT_EQ(strides.stride_b, gemms[i].problem.stride_a);
    EXPECT_EQ(strides.stride_c, gemms[i].problem.stride_c);
  }
}

TEST(AttentionHost, GemmBenchHasNoEquivalentForDoubleTransposesOrGappedBatches) {
  redline::StridedMatmul p;
  p.m = 64, p.n = 32, p.k = 16, p.batch = 2;
  p.stride_a = 64 * 16, p.stride_b = 16 * 32, p.stride_c = 64 * 32;
  EXPECT_TRUE(redline::column_major_equivalent(p));
  p.transpose_a = p.transpose_b = true;
  EXPECT_FALSE(redline::column_major_equivalent(p));
  p.transpose_a = p.transpose_b = false;
  p.stride_c += 8;  // a gap between batches
  EXPECT_FALSE(redline::column_major_equivalent(p));
  p.batch = 1;  // one matrix has no stride to speak of
  EXPECT_TRUE(redline::column_major_equivalent(p));
  p.beta = 1.0f;  // accumulating into C: not gemm_bench's GEMM
  EXPECT_FALSE(redline::column_major_equivalent(p));
  p.beta = 0.0f;
  p.output = redline::MatmulElement::fp32;  // a weight gradient's fp32 C
  EXPECT_FALSE(redline::column_major_equivalent(p));
}

TEST(AttentionHost, UnfusedGemmFlopsFollowTheConvention) {
  double forward = 0, backward = 0;
  for (const auto& gemm : redline::unfused_attention_gemms(gqa_shape(), GemmDtype::fp16))
    (gemm.backward ? backward : forward) += redline::matmul_flop_count(gemm.problem);
  EXPECT_DOUBLE_EQ(forward, redline::attention_forward_flop(gqa_shape()));
  // Four GEMMs of the forward's size; the convention's 2.5x adds the recompute
  // of P a fused backward does and this path does not need.
  EXPECT_DOUBLE_EQ(backward, 2 * forward);
}

TEST(AttentionHost, UnfusedWorkspaceGrowsWithTheSquareOfTheSequence) {
  AttentionShape shape = gqa_shape();
  const std::size_t at_1k = redline::unfused_attention_workspace_bytes(shape, GemmDtype::bf16, true);
  EXPECT_EQ(at_1k, 2u * 2 * 32 * 1024 * 1024 * 2);  // S/P and dP/dS, bf16
  shape.seq = 2048;
  EXPECT_EQ(redline::unfused_attention_workspace_bytes(shape, GemmDtype::bf16, true), 4 * at_1k);
}

TEST(AttentionHost, DtypesOutsideAttentionAreRefused) {
  EXPECT_THROW(redline::unfused_attention_gemms(gqa_shape(), GemmDtype::fp8_e4m3), std::invalid_argument);
  EXPECT_THROW(redline::attention_tolerance(GemmDtype::tf32), std::invalid_argument);
  EXPECT_LT(redline::attention_tolerance(GemmDtype::fp16), redline::attention_tolerance(GemmDtype::bf16));
  EXPECT_LT(redline::attention_tolerance(GemmDtype::bf16), redline::attention_tolerance(GemmDtype::fp8_e4m3));
}

}  // namespace
