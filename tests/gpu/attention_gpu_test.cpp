// The attention paths on a real device: the unfused cuBLASLt path and
// cuDNN's fused SDPA (bf16, fp16, fp8) against the CPU fp64 reference on
// small MHA, GQA and causal shapes, forward and backward; cuDNN against the
// unfused path on a larger shape (the check the tool uses where the CPU is
// too slow); and a shape cuDNN refuses reporting why instead of throwing.
// Exits 77 (skipped) without a GPU, like kernels_gpu_test.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <utility>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "harness/attention/attention_shape.hpp"
#include "kernels/attention_check.cuh"
#include "kernels/attention_cudnn.cuh"
#include "kernels/attention_tensors.cuh"
#include "kernels/attention_unfused.cuh"
#include "kernels/cuda_check.cuh"
#include "kernels/gemm_reference.cuh"

namespace {

using redline::AttentionBuffers;
using redline::AttentionCheck;
using redline::AttentionShape;
using redline::CudnnAttention;
using redline::GemmDtype;
using redline::UnfusedAttention;

AttentionShape make_shape(std::int64_t b, std::int64_t s, std::int64_t a_q, std::int64_t a_kv, std::int64_t d,
                          bool causal) {
  AttentionShape shape;
  shape.batch = b, shape.seq = s, shape.heads = a_q, shape.kv_heads = a_kv, shape.head_dim = d, shape.causal = causal;
  return shape;
}

// MHA, GQA (4 query heads per KV head), MQA, each with and without the mask.
std::vector<AttentionShape> small_shapes() {
  std::vector<AttentionShape> shapes;
  for (bool causal : {false, true}) {
    shapes.push_back(make_shape(2, 64, 4, 4, 64, causal));
    shapes.push_back(make_shape(1, 128, 8, 2, 64, causal));
    shapes.push_back(make_shape(1, 96, 4, 1, 128, causal));
  }
  return shapes;
}

std::string what(const AttentionShape& shape, GemmDtype dtype) {
  return redline::describe(shape) + " " + redline::gemm_dtype_info(dtype).name;
}

void expect_passed(const AttentionCheck& check, const std::string& context) {
  EXPECT_TRUE(check.passed()) << context << ": " << check.failure();
  for (const auto& t : check.tensors)
    std::printf("  %s %s rel %.3g\n", context.c_str(), t.tensor.c_str(), t.error.relative);
}

class AttentionGpu : public ::testing::Test {
 protected:
  void SetUp() override { REDLINE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  void TearDown() override { (void)cudaStreamDestroy(stream_); }
  cudaStream_t stream_ = nullptr;
};

TEST_F(AttentionGpu, UnfusedMatchesTheReference) {
  for (GemmDtype dtype : {GemmDtype::bf16, GemmDtype::fp16}) {
    for (const AttentionShape& shape : small_shapes()) {
      AttentionBuffers buffers(shape, dtype, true, 7, stream_);
      UnfusedAttention attention(shape, dtype, true, stream_);
      attention.forward(buffers.tensors());
      attention.backward(buffers.tensors());
      expect_passed(redline::check_attention_against_reference(shape, dtype, buffers.tensors(), true),
                    "unfused " + what(shape, dtype));
    }
  }
}

// Each GEMM alone on the path's tensors (what attention_bench sweep
// --unfused-gemms times), checked by the GEMM reference through its
// gemm_bench equivalent: proves the operands, the plans and the column-major
// mapping agree.
TEST_F(AttentionGpu, EveryUnfusedGemmAloneMatchesTheGemmReference) {
  const AttentionShape shape = make_shape(2, 128, 8, 2, 64, true);
  const GemmDtype dtype = GemmDtype::bf16;
  AttentionBuffers buffers(shape, dtype, true, 7, stream_);
  UnfusedAttention attention(shape, dtype, true, stream_);
  attention.forward(buffers.tensors());
  attention.backward(buffers.tensors());
  const double tolerance = redline::gemm_dtype_info(dtype).tolerance;
  // Last to first, so each GEMM reads what the path left (P, dS): a GEMM
  // run earlier in the path's order overwrites a later one's input.
  for (std::size_t i = attention.gemms().size(); i-- > 0;) {
    const redline::UnfusedGemm& gemm = attention.gemms()[i];
    SCOPED_TRACE(gemm.name);
    const auto e = redline::column_major_equivalent(gemm.problem);
    ASSERT_TRUE(e);
    const UnfusedAttention::Operands operands = attention.gemm_operands(i, buffers.tensors());
    attention.enqueue_gemm(i, buffers.tensors());
    const auto difference = redline::compare_with_reference(dtype, e->layout, e->m, e->n, e->k, operands.b, operands.a,
                                                            operands.c, gemm.problem.alpha, 1.0f, stream_, e->strides());
    EXPECT_EQ(difference.nonfinite, 0);
    EXPECT_LE(difference.relative_error(), tolerance);
    EXPECT_GT(difference.relative_error(), 0.0) << "a bf16 result equal to the fp32 reference: compared with itself?";
  }
  // The scores checked without their softmax scale (1/sqrt(64)): wrong, so
  // the check above did compare the scaled product.
  const auto scores = redline::column_major_equivalent(attention.gemms()[0].problem);
  const UnfusedAttention::Operands s_operands = attention.gemm_operands(0, buffers.tensors());
  attention.enqueue_gemm(0, buffers.tensors());
  const auto wrong = redline::compare_with_reference(dtype, scores->layout, scores->m, scores->n, scores->k,
                                                     s_operands.b, s_operands.a, s_operands.c, 1.0f, 1.0f, stream_,
                                                     scores->strides());
  EXPECT_GT(wrong.relative_error(), tolerance);
}

TEST_F(AttentionGpu, CudnnMatchesTheReference) {
  int ran = 0;
  std::string refused;
  for (GemmDtype dtype : {GemmDtype::bf16, GemmDtype::fp16}) {
    for (const AttentionShape& shape : small_shapes()) {
      CudnnAttention attention(shape, dtype, true, stream_);
      // One refused shape must not hide the others: each is reported.
      if (!attention.supported()) {
        refused += what(shape, dtype) + ": " + attention.unsupported_reason() + "\n";
        continue;
      }
      ++ran;
      AttentionBuffers buffers(shape, dtype, true, 7, stream_);
      attention.forward(buffers.tensors());
      attention.backward(buffers.tensors());
      expect_passed(redline::check_attention_against_reference(shape, dtype, buffers.tensors(), true),
                    "cudnn " + what(shape, dtype));
    }
  }
  if (!refused.empty()) std::printf("  cuDNN refused:\n%s", refused.c_str());
  if (ran == 0) GTEST_SKIP() << "cuDNN refused every shape";
}

// FP8 needs Hopper or newer and d = 128 (cuDNN's FP8 SDPA); elsewhere the
// reason is the result. Each object is calibrated on its tensors first and
// the check reads them with its scales. s = 2048 is there for the
// backward's dS (~0.3 / s): the old fixed scale (8) zeroed it, and dQ and
// dK with it, from s = 4096 and mostly at 2048; calibration must keep it.
// check_attention as the benchmark runs it: the full CPU reference at
// s = 256, sampled rows of each KV group at s = 2048.
TEST_F(AttentionGpu, CudnnFp8MatchesTheReference) {
  for (const std::int64_t seq : {256, 2048}) {
    for (bool causal : {false, true}) {
      const AttentionShape shape = make_shape(1, seq, 2, 2, 128, causal);
      CudnnAttention attention(shape, GemmDtype::fp8_e4m3, true, stream_);
      if (!attention.supported()) GTEST_SKIP() << "fp8: " << attention.unsupported_reason();
      AttentionBuffers buffers(shape, GemmDtype::fp8_e4m3, true, 7, stream_);
      attention.calibrate_fp8(buffers.tensors());
      const redline::AttentionFp8Amax amax = attention.fp8_amax();
      const redline::AttentionFp8Scales scales = attention.fp8_scales();
      const std::string context = "cudnn " + what(shape, GemmDtype::fp8_e4m3);
      std::printf("  %s amax: s %.3g o %.3g dp %.3g dq %.3g dk %.3g dv %.3g\n", context.c_str(), amax.s, amax.o,
                  amax.dp, amax.dq, amax.dk, amax.dv);
      std::printf("  %s scales: s %g o %g s_backward %g dp %g dq %g dk %g dv %g\n", context.c_str(), scales.s,
                  scales.o, scales.s_backward, scales.dp, scales.dq, scales.dk, scales.dv);
      EXPECT_GT(amax.o, 0.0f);
      EXPECT_GT(amax.dp, 0.0f);
      EXPECT_GT(amax.dq, 0.0f) << context << ": dQ is zero (dS underflowed)";
      EXPECT_GT(amax.dk, 0.0f) << context << ": dK is zero (dS underflowed)";
      // The forward's P is cast before normalization, so its peak is 1, whatever amax_s says.
      EXPECT_LE(scales.s, 448.0f) << context << ": the forward's P saturates";
      // Calibrated: every written tensor's amax times its scale within e4m3's range.
      for (const auto& [name, a, scale] : {std::tuple{"o", amax.o, scales.o}, std::tuple{"dp", amax.dp, scales.dp},
                                           std::tuple{"dq", amax.dq, scales.dq}, std::tuple{"dk", amax.dk, scales.dk},
                                           std::tuple{"dv", amax.dv, scales.dv}})
        EXPECT_LE(a * scale, 448.0f) << context << ": " << name << " saturates";
      expect_passed(redline::check_attention(shape, GemmDtype::fp8_e4m3, buffers.tensors(), true, &scales), context);
    }
  }
}

namespace {

// [b, x, y, d] -> [b, y, x, d] on 2-byte elements (BHSD <-> BSHD).
std::vector<std::uint16_t> swap_middle(const std::vector<std::uint16_t>& in, std::int64_t b, std::int64_t x,
                                       std::int64_t y, std::int64_t d) {
  std::vector<std::uint16_t> out(in.size());
  for (std::int64_t i = 0; i < b; ++i)
    for (std::int64_t j = 0; j < x; ++j)
      for (std::int64_t k = 0; k < y; ++k)
        for (std::int64_t e = 0; e < d; ++e) out[((i * y + k) * x + j) * d + e] = in[((i * x + j) * y + k) * d + e];
  return out;
}

// Rewrites a device tensor in place: [b, x, y, d] -> [b, y, x, d].
void swap_on_device(void* data, std::int64_t b, std::int64_t x, std::int64_t y, std::int64_t d) {
  std::vector<std::uint16_t> host(static_cast<std::size_t>(b * x * y * d));
  REDLINE_CUDA_CHECK(cudaMemcpy(host.data(), data, host.size() * 2, cudaMemcpyDeviceToHost));
  host = swap_middle(host, b, x, y, d);
  REDLINE_CUDA_CHECK(cudaMemcpy(data, host.data(), host.size() * 2, cudaMemcpyHostToDevice));
  // A pageable copy may return before its DMA lands; the test's stream is
  // non-blocking and would not wait for it.
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace

// The token-major layout a training step's projections write: the inputs
// turned into BSHD, cuDNN run on them there, its outputs turned back and
// checked against the reference like any BHSD result.
TEST_F(AttentionGpu, CudnnReadsAndWritesTokenMajorTensors) {
  for (const AttentionShape& shape : {make_shape(2, 64, 4, 2, 64, true), make_shape(1, 96, 4, 1, 128, true)}) {
    CudnnAttention attention(shape, GemmDtype::bf16, true, stream_, redline::AttentionLayout::bshd);
    if (!attention.supported()) GTEST_SKIP() << "bshd: " << attention.unsupported_reason();
    AttentionBuffers buffers(shape, GemmDtype::bf16, true, 17, stream_);
    const redline::AttentionTensors& t = buffers.tensors();
    const std::int64_t b = shape.batch, s = shape.seq, d = shape.head_dim, a = shape.heads, kv = shape.kv_heads;
    for (auto [tensor, heads] : {std::pair{t.q, a}, std::pair{t.k, kv}, std::pair{t.v, kv}, std::pair{t.d_o, a}})
      swap_on_device(tensor, b, heads, s, d);
    attention.forward(t);
    attention.backward(t);
    REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    for (auto [tensor, heads] : {std::pair{t.q, a}, std::pair{t.k, kv}, std::pair{t.v, kv}, std::pair{t.d_o, a},
                                 std::pair{t.o, a}, std::pair{t.dq, a}, std::pair{t.dk, kv}, std::pair{t.dv, kv}})
      swap_on_device(tensor, b, s, heads, d);
    expect_passed(redline::check_attention_against_reference(shape, GemmDtype::bf16, t, true),
                  "bshd " + what(shape, GemmDtype::bf16));
  }
}

// The check large shapes get: cuDNN against the unfused path on the same
// inputs (same seed), streamed through the host.
TEST_F(AttentionGpu, CudnnMatchesUnfusedOnALargerShape) {
  const AttentionShape shape = make_shape(2, 1024, 8, 2, 128, true);
  CudnnAttention fused(shape, GemmDtype::bf16, true, stream_);
  if (!fused.supported()) GTEST_SKIP() << fused.unsupported_reason();
  AttentionBuffers fused_buffers(shape, GemmDtype::bf16, true, 11, stream_);
  AttentionBuffers unfused_buffers(shape, GemmDtype::bf16, true, 11, stream_);
  UnfusedAttention unfused(shape, GemmDtype::bf16, true, stream_);
  fused.forward(fused_buffers.tensors());
  fused.backward(fused_buffers.tensors());
  unfused.forward(unfused_buffers.tensors());
  unfused.backward(unfused_buffers.tensors());
  expect_passed(redline::check_attention_against_gpu(shape, GemmDtype::bf16, fused_buffers.tensors(), GemmDtype::bf16,
                                                     unfused_buffers.tensors(), true),
                "cudnn vs unfused " + what(shape, GemmDtype::bf16));
}

// The check the benchmark's large cases get: sampled rows of the first and
// last KV group against the exact math, for both paths; with budgets that
// cover every row it agrees with the full reference.
TEST_F(AttentionGpu, SampledGroupsCheckBothPaths) {
  const AttentionShape shape = make_shape(2, 1024, 8, 2, 128, true);
  AttentionBuffers buffers(shape, GemmDtype::bf16, true, 13, stream_);
  UnfusedAttention unfused(shape, GemmDtype::bf16, true, stream_);
  unfused.forward(buffers.tensors());
  unfused.backward(buffers.tensors());
  expect_passed(redline::check_attention_on_groups(shape, GemmDtype::bf16, buffers.tensors(), true),
                "unfused groups " + what(shape, GemmDtype::bf16));
  CudnnAttention fused(shape, GemmDtype::bf16, true, stream_);
  if (!fused.supported()) GTEST_SKIP() << fused.unsupported_reason();
  fused.forward(buffers.tensors());
  fused.backward(buffers.tensors());
  expect_passed(redline::check_attention_on_groups(shape, GemmDtype::bf16, buffers.tensors(), true),
                "cudnn groups " + what(shape, GemmDtype::bf16));
  // A wrong mask fails the sampled check too.
  AttentionShape unmasked = shape;
  unmasked.causal = false;
  EXPECT_FALSE(redline::check_attention_on_groups(unmasked, GemmDtype::bf16, buffers.tensors(), true).passed());
}

// A wrong result must fail: the unfused output of a causal problem checked
// as if it were not causal.
TEST_F(AttentionGpu, TheCheckCatchesAWrongMask) {
  AttentionShape shape = make_shape(1, 64, 2, 2, 64, true);
  AttentionBuffers buffers(shape, GemmDtype::bf16, false, 3, stream_);
  UnfusedAttention attention(shape, GemmDtype::bf16, false, stream_);
  attention.forward(buffers.tensors());
  shape.causal = false;
  EXPECT_FALSE(redline::check_attention_against_reference(shape, GemmDtype::bf16, buffers.tensors(), false).passed());
}

// Head dim 1024 is beyond every cuDNN SDPA kernel: unsupported with a
// reason, and running it anyway is a logic error, not a crash.
TEST_F(AttentionGpu, CudnnReportsAnUnsupportedShape) {
  const AttentionShape shape = make_shape(1, 64, 2, 2, 1024, false);
  CudnnAttention attention(shape, GemmDtype::bf16, true, stream_);
  EXPECT_FALSE(attention.supported());
  EXPECT_FALSE(attention.unsupported_reason().empty());
  std::printf("  d=1024: %s\n", attention.unsupported_reason().c_str());
  AttentionBuffers buffers(shape, GemmDtype::bf16, true, 1, stream_);
  EXPECT_THROW(attention.forward(buffers.tensors()), std::logic_error);
}

TEST_F(AttentionGpu, CudnnVersionIsReported) {
  const std::string version = CudnnAttention::version();
#if defined(REDLINE_HAVE_CUDNN)
  EXPECT_NE(version.find("frontend"), std::string::npos) << version;
#else
  EXPECT_TRUE(version.empty());
#endif
}

}  // namespace
