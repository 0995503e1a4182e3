// The GEMM path on a real device: LtGemm against the reference for every
// dtype and layout (odd shapes included), the reference itself against a
// host computation (so a wrong result is really caught), buffer rotation,
// the reported algorithm, the refused combinations, the roofline kernels and
// CUPTI kernel tracing.
#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "harness/gpu/gemm_dtype.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"
#include "kernels/gemm_lt.cuh"
#include "kernels/gemm_reference.cuh"
#include "kernels/kernel_trace.cuh"
#include "kernels/random_fill.cuh"
#include "kernels/roofline.cuh"

namespace {

using redline::compare_with_reference;
using redline::DeviceBuffer;
using redline::enqueue_device_copy;
using redline::enqueue_fma;
using redline::FmaLaunch;
using redline::GemmCheck;
using redline::GemmDtype;
using redline::GemmLayout;
using redline::GemmOptions;
using redline::GemmUnsupported;
using redline::KernelTrace;
using redline::LtGemm;
using redline::plan_fma;
using redline::random_fill;
using redline::random_value_at;
using redline::ReferenceDifference;
using redline::trace_kernels;
using redline::random_detail::from_double;
using redline::random_detail::to_double;

bool is_fp8(GemmDtype dtype) { return dtype == GemmDtype::fp8_e4m3 || dtype == GemmDtype::fp8_e4m3_e5m2; }

// cuBLASLt's FP8 GEMMs need compute capability 8.9 (Ada) or newer.
bool device_has_fp8() {
  int device = 0, major = 0, minor = 0;
  REDLINE_CUDA_CHECK(cudaGetDevice(&device));
  REDLINE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  REDLINE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor >= 89;
}

#define SKIP_FP8_WITHOUT_HARDWARE(dtype)                                                        \
  do {                                                                                          \
    if (is_fp8(dtype) && !device_has_fp8()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9+"; \
  } while (0)

std::string check_text(const GemmCheck& check) {
  return "relative error " + std::to_string(check.relative_error) + " (tolerance " +
         std::to_string(check.tolerance) + "), " + std::to_string(check.nonfinite) + " non-finite";
}

// ---------------------------------------------------------------------------
// LtGemm against the reference.

struct GemmCase {
  GemmDtype dtype;
  GemmLayout layout;
  std::int64_t m, n, k;
  std::int64_t batch = 1;
};

std::vector<GemmCase> verify_cases() {
  std::vector<GemmCase> cases;
  for (const GemmDtype dtype : redline::all_gemm_dtypes()) {
    if (is_fp8(dtype)) {
      // FP8 needs tn, K % 16 == 0 and M % 16 == 0; N is free, so it is odd here.
      cases.push_back({dtype, GemmLayout::tn, 128, 256, 512});
      cases.push_back({dtype, GemmLayout::tn, 272, 129, 96});
    } else {
      for (const GemmLayout layout : {GemmLayout::tn, GemmLayout::nn, GemmLayout::nt}) {
        cases.push_back({dtype, layout, 128, 256, 512});
        cases.push_back({dtype, layout, 257, 129, 96});  // partial tiles on every edge
      }
    }
  }
  cases.push_back({GemmDtype::bf16, GemmLayout::tn, 4096, 4096, 4096});
  // Strided batches, as attention's GEMMs run (its dV and dK are nt).
  cases.push_back({GemmDtype::bf16, GemmLayout::nt, 128, 256, 512, 3});
  cases.push_back({GemmDtype::fp16, GemmLayout::tn, 257, 129, 96, 5});
  cases.push_back({GemmDtype::bf16, GemmLayout::nn, 128, 64, 1024, 4});
  return cases;
}

std::string case_name(const testing::TestParamInfo<GemmCase>& info) {
  const GemmCase& c = info.param;
  return std::string(redline::gemm_dtype_info(c.dtype).name) + "_" + redline::gemm_layout_name(c.layout) + "_" +
         std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
         (c.batch > 1 ? "_batch" + std::to_string(c.batch) : "");
}

class LtGemmVerify : public testing::TestWithParam<GemmCase> {};

TEST_P(LtGemmVerify, MatchesTheReferenceOnFirstAndLastBufferSet) {
  const GemmCase& c = GetParam();
  SKIP_FP8_WITHOUT_HARDWARE(c.dtype);
  GemmOptions options;
  options.dtype = c.dtype;
  options.layout = c.layout;
  options.batch = c.batch;
  const LtGemm gemm(c.m, c.n, c.k, options, nullptr);
  EXPECT_DOUBLE_EQ(gemm.flop_count(), 2.0 * c.m * c.n * c.k * c.batch);

  for (const int set : {0, gemm.buffer_sets() - 1}) {
    const GemmCheck check = gemm.verify(set);
    EXPECT_TRUE(check.passed()) << "set " << set << ": " << check_text(check);
    EXPECT_EQ(check.tolerance, redline::gemm_dtype_info(c.dtype).tolerance);
    // 16-bit outputs always differ from the fp32 reference by their rounding:
    // an error of exactly 0 would mean C was compared with itself.
    if (redline::gemm_dtype_info(c.dtype).c_bytes == 2) EXPECT_GT(check.relative_error, 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, LtGemmVerify, testing::ValuesIn(verify_cases()), case_name);

// ---------------------------------------------------------------------------
// The reference against a host computation from the same stored inputs:
// proves it right on edge tiles, and that it catches a wrong C.

// Two batches: an error in the second is caught only if the reference
// reads every batch at its own offset.
template <typename TA, typename TB, typename TC>
void check_reference_against_host(GemmDtype dtype, GemmLayout layout, float scale_a, float scale_b) {
  // Not multiples of the 64 x 64 x 32 reference tiles in any dimension.
  const std::int64_t m = 67, n = 45, k = 33;
  const redline::LeadingDims ld = redline::leading_dims(layout, m, n, k);
  const redline::GemmBatch batch = redline::dense_batch(2, m, n, k);
  const std::uint64_t seed_a = 11, seed_b = 12;
  DeviceBuffer<TA> a(static_cast<std::size_t>(batch.count * m * k));
  DeviceBuffer<TB> b(static_cast<std::size_t>(batch.count * k * n));
  random_fill(a.data(), a.size(), seed_a);
  random_fill(b.data(), b.size(), seed_b);

  std::vector<double> expected(static_cast<std::size_t>(batch.count * m * n));
  for (std::int64_t z = 0; z < batch.count; ++z)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) {
        double sum = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          const std::int64_t a_index = layout == GemmLayout::tn ? i * ld.lda + p : p * ld.lda + i;
          const std::int64_t b_index = layout == GemmLayout::nt ? p * ld.ldb + j : j * ld.ldb + p;
          sum += to_double(random_value_at<TA>(seed_a, static_cast<std::uint64_t>(z * batch.stride_a + a_index))) *
                 to_double(random_value_at<TB>(seed_b, static_cast<std::uint64_t>(z * batch.stride_b + b_index)));
        }
        expected[static_cast<std::size_t>(z * batch.stride_c + j * ld.ldc + i)] =
            static_cast<double>(scale_a) * scale_b * sum;
      }
  std::vector<TC> host_c(expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) host_c[i] = from_double<TC>(expected[i]);
  DeviceBuffer<TC> c(host_c.size());
  auto compare = [&](float sa, float sb) {
    c.copy_from_host(host_c);
    return compare_with_reference(dtype, layout, m, n, k, a.data(), b.data(), c.data(), sa, sb, nullptr, batch);
  };

  // C is the exact product rounded once to TC: the only error is that rounding.
  const double unit_roundoff = std::is_same_v<TC, float>    ? 0x1.0p-24
                               : std::is_same_v<TC, __half> ? 0x1.0p-11
                                                            : 0x1.0p-8;
  const double tolerance = redline::gemm_dtype_info(dtype).tolerance;
  const ReferenceDifference exact = compare(scale_a, scale_b);
  EXPECT_EQ(exact.nonfinite, 0);
  EXPECT_LE(exact.relative_error(), std::max(2 * unit_roundoff, 1e-6));
  EXPECT_GT(exact.sum_squared_reference, 0.0);

  if (scale_a * scale_b != 1.0f) {
    const ReferenceDifference unscaled = compare(1.0f, 1.0f);
    EXPECT_GT(unscaled.relative_error(), tolerance) << "the reference ignores the scales";
  }

  // One element far off, in the last (partial) tile of the second batch.
  const std::size_t last = host_c.size() - 1;
  const TC kept = host_c[last];
  host_c[last] = from_double<TC>(expected[last] + 100.0);
  const ReferenceDifference corrupted = compare(scale_a, scale_b);
  EXPECT_GT(corrupted.relative_error(), tolerance);
  EXPECT_EQ(corrupted.nonfinite, 0);

  // A NaN is counted, whatever the error of the rest.
  host_c[last] = kept;
  host_c[0] = from_double<TC>(std::numeric_limits<double>::quiet_NaN());
  const ReferenceDifference nan = compare(scale_a, scale_b);
  EXPECT_EQ(nan.nonfinite, 1);
  EXPECT_FALSE(redline::gemm_check(dtype, nan).passed());
}

TEST(GemmReference, MatchesHostAndCatchesWrongResults) {
  for (const GemmLayout layout : {GemmLayout::tn, GemmLayout::nn, GemmLayout::nt}) {
    SCOPED_TRACE(redline::gemm_layout_name(layout));
    check_reference_against_host<float, float, float>(GemmDtype::fp32, layout, 1.0f, 1.0f);
    check_reference_against_host<float, float, float>(GemmDtype::tf32, layout, 1.0f, 1.0f);
    check_reference_against_host<__half, __half, __half>(GemmDtype::fp16, layout, 1.0f, 1.0f);
    check_reference_against_host<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16>(GemmDtype::bf16, layout, 1.0f, 1.0f);
    check_reference_against_host<__nv_fp8_e4m3, __nv_fp8_e4m3, __nv_bfloat16>(GemmDtype::fp8_e4m3, layout, 0.5f,
                                                                               0.25f);
    check_reference_against_host<__nv_fp8_e4m3, __nv_fp8_e5m2, __nv_bfloat16>(GemmDtype::fp8_e4m3_e5m2, layout,
                                                                               0.5f, 0.25f);
  }
}

TEST(GemmReference, RejectsEmptyShapes) {
  EXPECT_THROW(compare_with_reference(GemmDtype::bf16, GemmLayout::tn, 0, 1, 1, nullptr, nullptr, nullptr, 1, 1,
                                      nullptr),
               std::invalid_argument);
}

// ---------------------------------------------------------------------------
// Buffer rotation, algorithm, refused combinations.

TEST(LtGemm, RotatesBufferSetsUntilTheyOverflowL2) {
  GemmOptions options;  // bf16 tn
  const std::int64_t size = 128;
  const LtGemm by_l2(size, size, size, options, nullptr);
  const std::size_t per_set = 3 * size * size * 2;
  EXPECT_EQ(by_l2.bytes_per_set(), per_set);
  EXPECT_GT(by_l2.buffer_sets(), 1) << "a 96 KiB set fits in any L2";
  EXPECT_LE(by_l2.buffer_sets(), options.max_buffer_sets);

  options.min_rotation_bytes = 3 * per_set;
  EXPECT_EQ(LtGemm(size, size, size, options, nullptr).buffer_sets(), 3);
  options.min_rotation_bytes = 3 * per_set + 1;
  EXPECT_EQ(LtGemm(size, size, size, options, nullptr).buffer_sets(), 4);
  options.min_rotation_bytes = 1;
  EXPECT_EQ(LtGemm(size, size, size, options, nullptr).buffer_sets(), 1);
  options.min_rotation_bytes = std::size_t{1} << 40;
  options.max_buffer_sets = 5;
  const LtGemm capped(size, size, size, options, nullptr);
  ASSERT_EQ(capped.buffer_sets(), 5);

  // Each set computes correctly; enqueue wraps around the sets.
  for (int set = 0; set < capped.buffer_sets(); ++set) {
    const GemmCheck check = capped.verify(set);
    EXPECT_TRUE(check.passed()) << "set " << set << ": " << check_text(check);
  }
  for (int set = 0; set < 2 * capped.buffer_sets(); ++set) capped.enqueue(set);
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(capped.stream()));
}

TEST(LtGemm, ReportsTheSelectedAlgorithmForEveryCandidate) {
  GemmOptions options;
  options.heuristic_candidates = 4;
  options.min_rotation_bytes = 1;
  LtGemm gemm(2048, 2048, 2048, options, nullptr);
  ASSERT_GE(gemm.candidate_count(), 1);
  EXPECT_LE(gemm.candidate_count(), 4);
  for (int candidate = 0; candidate < gemm.candidate_count(); ++candidate) {
    gemm.select_candidate(candidate);
    const redline::GemmAlgorithm& algorithm = gemm.algorithm();
    EXPECT_EQ(algorithm.candidate, candidate);
    EXPECT_GE(algorithm.algo_id, 0);
    EXPECT_GE(algorithm.split_k, 1);
    // The attribute read succeeded (id >= 0); a defined id must be in the tile table (0 is UNDEFINED).
    EXPECT_GE(algorithm.tile_id, 0);
    EXPECT_TRUE(algorithm.tile.has_value() || algorithm.tile_id == 0)
        << "tile id " << algorithm.tile_id << " is not in the tile table";
    EXPECT_LE(algorithm.workspace_bytes, options.workspace_bytes);
    EXPECT_GE(algorithm.heuristic_waves, 0.0f);
    const GemmCheck check = gemm.verify();
    EXPECT_TRUE(check.passed()) << "candidate " << candidate << ": " << check_text(check);
  }
  EXPECT_THROW(gemm.select_candidate(gemm.candidate_count()), std::out_of_range);
  EXPECT_THROW(gemm.select_candidate(-1), std::out_of_range);
}

TEST(LtGemm, RefusesFp8CombinationsCuBlasLtCannotRun) {
  for (const GemmDtype dtype : {GemmDtype::fp8_e4m3, GemmDtype::fp8_e4m3_e5m2}) {
    GemmOptions options;
    options.dtype = dtype;
    options.layout = GemmLayout::nn;
    EXPECT_THROW(LtGemm(128, 128, 128, options, nullptr), GemmUnsupported);
    options.layout = GemmLayout::tn;
    try {
      LtGemm(128, 128, 24, options, nullptr);
      ADD_FAILURE() << "K = 24 accepted for FP8";
    } catch (const GemmUnsupported& e) {
      EXPECT_NE(std::string(e.what()).find("K = 24"), std::string::npos) << e.what();
    }
    EXPECT_THROW(LtGemm(104, 128, 128, options, nullptr), GemmUnsupported);  // M % 16 = 8
  }
}

TEST(LtGemm, VersionLooksLikeMajorMinorPatch) {
  const std::string version = redline::cublaslt_version();
  EXPECT_EQ(std::count(version.begin(), version.end(), '.'), 2) << version;
}

// ---------------------------------------------------------------------------
// Roofline kernels.

TEST(Roofline, DeviceCopyCopiesExactlyTheGivenBytes) {
  // Not a multiple of the grid's stride, so the tail loop runs; the last 16
  // bytes of dst are outside the copy and must stay as they were.
  const std::size_t words = ((std::size_t{16} << 20) + 16 * 37) / 4;
  DeviceBuffer<std::int32_t> src(words), dst(words);
  random_fill(src.data(), words, 5, -1000000, 1000000);
  REDLINE_CUDA_CHECK(cudaMemset(dst.data(), 0x5A, dst.bytes()));
  const std::size_t copied = dst.bytes() - 16;
  enqueue_device_copy(src.data(), dst.data(), copied, nullptr);
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<std::int32_t> from = src.to_host(), to = dst.to_host();
  EXPECT_EQ(std::memcmp(from.data(), to.data(), copied), 0);
  std::int32_t untouched = 0;
  std::memset(&untouched, 0x5A, sizeof untouched);
  for (std::size_t i = copied / 4; i < words; ++i) EXPECT_EQ(to[i], untouched) << "word " << i;

  // A copy smaller than one block.
  REDLINE_CUDA_CHECK(cudaMemset(dst.data(), 0, dst.bytes()));
  enqueue_device_copy(src.data(), dst.data(), 48, nullptr);
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<std::int32_t> small = dst.to_host();
  EXPECT_EQ(std::memcmp(from.data(), small.data(), 48), 0);
  EXPECT_EQ(small[12], 0);
}

TEST(Roofline, DeviceCopyRejectsMisalignment) {
  DeviceBuffer<std::int32_t> src(64), dst(64);
  const auto* src_bytes = reinterpret_cast<const unsigned char*>(src.data());
  EXPECT_THROW(enqueue_device_copy(src_bytes + 4, dst.data(), 128, nullptr), std::invalid_argument);
  EXPECT_THROW(enqueue_device_copy(src.data(), dst.data(), 100, nullptr), std::invalid_argument);
  EXPECT_NO_THROW(enqueue_device_copy(src.data(), dst.data(), 0, nullptr));
}

TEST(Roofline, FmaKernelDoesThePlannedWorkWithFiniteValues) {
  const double target = 1e10;
  const FmaLaunch launch = plan_fma(target);
  ASSERT_GT(launch.blocks, 0);
  ASSERT_GT(launch.threads_per_block, 0);
  ASSERT_GT(launch.iterations, 0);
  EXPECT_GT(launch.flop_count(), 0.5 * target);
  EXPECT_LT(launch.flop_count(), 2.0 * target);

  DeviceBuffer<float> sink(launch.sink_floats());
  REDLINE_CUDA_CHECK(cudaMemset(sink.data(), 0xFF, sink.bytes()));  // NaN: every thread must write
  enqueue_fma(launch, sink.data(), nullptr);
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
  std::size_t bad = 0;
  for (const float value : sink.to_host()) {
    // Each of the chains converges to 1; their sum stays a normal number.
    const float magnitude = std::fabs(value);
    if (!std::isfinite(value) || magnitude < std::numeric_limits<float>::min() || magnitude > 1e3f) ++bad;
  }
  EXPECT_EQ(bad, 0u);

  EXPECT_THROW(enqueue_fma(FmaLaunch{}, sink.data(), nullptr), std::invalid_argument);
  EXPECT_THROW(enqueue_fma(launch, nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(plan_fma(0), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// CUPTI kernel tracing.

TEST(KernelTrace, NamesTheKernelsAGemmLaunches) {
  GemmOptions options;
  options.min_rotation_bytes = 1;
  const LtGemm gemm(1024, 1024, 1024, options, nullptr);
  const KernelTrace trace = trace_kernels([&] {
    gemm.enqueue(0);
    REDLINE_CUDA_CHECK(cudaStreamSynchronize(gemm.stream()));
  });
  if (trace.unavailable) GTEST_SKIP() << "kernel tracing unavailable: " << *trace.unavailable;
  ASSERT_FALSE(trace.kernels.empty());
  for (const auto& kernel : trace.kernels) {
    std::printf("  traced: %s grid %ux%ux%u block %ux%ux%u\n", kernel.name.c_str(), kernel.grid_x, kernel.grid_y,
                kernel.grid_z, kernel.block_x, kernel.block_y, kernel.block_z);
    EXPECT_FALSE(kernel.name.empty());
    EXPECT_GE(kernel.ctas(), 1u);
    EXPECT_GE(kernel.block_x, 1u);
  }
}

TEST(KernelTrace, DemanglesOurOwnKernelAndSeesOnlyThisTrace) {
  DeviceBuffer<std::int32_t> src(1 << 16), dst(1 << 16);
  const auto copy = [&] {
    enqueue_device_copy(src.data(), dst.data(), src.bytes(), nullptr);
    REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
  };
  copy();  // outside any trace: must not show up below
  const KernelTrace trace = trace_kernels(copy);
  if (trace.unavailable) GTEST_SKIP() << "kernel tracing unavailable: " << *trace.unavailable;
  ASSERT_EQ(trace.kernels.size(), 1u);
  EXPECT_NE(trace.kernels[0].name.find("copy16_kernel"), std::string::npos) << trace.kernels[0].name;
  EXPECT_NE(trace.kernels[0].name.rfind("_Z", 0), 0u) << "not demangled: " << trace.kernels[0].name;
  EXPECT_GE(trace.kernels[0].grid_x, 1u);
  EXPECT_GE(trace.kernels[0].block_x, 32u);
  EXPECT_EQ(trace.kernels[0].block_y, 1u);
}

TEST(KernelTrace, WorkExceptionsPropagateAndTracingStopsCleanly) {
  EXPECT_THROW(trace_kernels([] { throw std::runtime_error("work failed"); }), std::runtime_error);
  // Tracing was disabled on the way out: the next trace starts clean.
  DeviceBuffer<std::int32_t> src(1024), dst(1024);
  const KernelTrace trace = trace_kernels([&] {
    enqueue_device_copy(src.data(), dst.data(), src.bytes(), nullptr);
    REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
  });
  if (trace.unavailable) GTEST_SKIP() << "kernel tracing unavailable: " << *trace.unavailable;
  EXPECT_EQ(trace.kernels.size(), 1u);
}

}  // namespace
