// The GEMM recorder (libredline_profile_gemms.so) without a GPU: a call's
// shape and precision from plain values and from real cuBLASLt descriptors
// (host-only calls), and the library preloaded into a program
// (profile_gemms_child) that calls each entry point it stands in for: the
// lines it writes, one a call, none for a call made inside a recorded one,
// and the external ids it hands the stand-in libcupti. The kernels those
// ids tie to, on a GPU, are scripts/gpu-check's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "harness/core/child_process.hpp"
#include "harness/profile/trace_file.hpp"
#include "kernels/profile/gemm_shapes.hpp"
#include "tests/recorder_run.hpp"
#include "tests/support.hpp"

using namespace redline;
using namespace redline::profile;

TEST(GemmShapes, PrecisionsAsTheMamfRowsNameThem) {
  EXPECT_EQ(gemm_dtype_name(CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUBLAS_DEFAULT_MATH), "bf16");
  EXPECT_EQ(gemm_dtype_name(CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, CUBLAS_DEFAULT_MATH), "fp16");
  EXPECT_EQ(gemm_dtype_name(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_DEFAULT_MATH), "fp32");
  EXPECT_EQ(gemm_dtype_name(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_DEFAULT_MATH), "tf32");
  EXPECT_EQ(gemm_dtype_name(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_TF32_TENSOR_OP_MATH), "tf32");
  // The flag bits above the mode do not hide it; pedantic compute refuses TF32.
  EXPECT_EQ(gemm_dtype_name(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F,
                            CUBLAS_TF32_TENSOR_OP_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION),
            "tf32");
  EXPECT_EQ(gemm_dtype_name(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_TF32_TENSOR_OP_MATH), "fp32");
  EXPECT_EQ(gemm_dtype_name(CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUBLAS_COMPUTE_32F, 0), "fp8_e4m3");
  EXPECT_EQ(gemm_dtype_name(CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, CUBLAS_COMPUTE_32F, 0), "fp8_e4m3_e5m2");
  EXPECT_EQ(gemm_dtype_name(CUDA_R_8F_E5M2, CUDA_R_8F_E4M3, CUBLAS_COMPUTE_32F, 0), "fp8_e4m3_e5m2");  // swapped
  EXPECT_EQ(gemm_dtype_name(CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, 0), "fp64");
  const GemmShape s = gemm_ex_shape(4096, 1024, 512, 8, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 0);
  EXPECT_EQ(s.m, 4096);
  EXPECT_EQ(s.n, 1024);
  EXPECT_EQ(s.k, 512);
  EXPECT_EQ(s.batch, 8);
  EXPECT_EQ(s.dtype, "bf16");
}

namespace {

struct LtDescriptors {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  std::string failed;  // the call that failed, if one did
  ~LtDescriptors() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

// D (m x n, batch) = op(A) op(B), A stored as op(A) needs: k x m transposed.
void make(LtDescriptors& l, cublasOperation_t trans_a, cudaDataType type, cublasComputeType_t compute, int batch) {
  const std::uint64_t m = 96, n = 40, k = 200;
  if (cublasLtMatmulDescCreate(&l.desc, compute, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS)
    return void(l.failed = "cublasLtMatmulDescCreate");
  cublasLtMatmulDescSetAttribute(l.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a));
  const bool t = trans_a != CUBLAS_OP_N;
  if (cublasLtMatrixLayoutCreate(&l.a, type, t ? k : m, t ? m : k, t ? k : m) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&l.b, type, k, n, k) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&l.d, CUDA_R_16BF, m, n, m) != CUBLAS_STATUS_SUCCESS)
    return void(l.failed = "cublasLtMatrixLayoutCreate");
  for (cublasLtMatrixLayout_t layout : {l.a, l.b, l.d})
    cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch));
}

cublasStatus_t refuse(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, void*, size_t, size_t*) {
  return CUBLAS_STATUS_INVALID_VALUE;
}

}  // namespace

TEST(GemmShapes, CublasLtShapeFromRealDescriptors) {
  for (const cublasOperation_t trans_a : {CUBLAS_OP_N, CUBLAS_OP_T}) {
    LtDescriptors l;
    make(l, trans_a, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 3);
    if (!l.failed.empty()) GTEST_SKIP() << l.failed << " failed here (no GPU?)";
    const auto shape =
        lt_matmul_shape(cublasLtMatmulDescGetAttribute, cublasLtMatrixLayoutGetAttribute, l.desc, l.a, l.b, l.d);
    ASSERT_TRUE(shape.has_value());
    EXPECT_EQ(shape->m, 96);
    EXPECT_EQ(shape->n, 40);
    EXPECT_EQ(shape->k, 200) << "transa " << trans_a;
    EXPECT_EQ(shape->batch, 3);
    EXPECT_EQ(shape->dtype, "bf16");
  }
  LtDescriptors tf32;
  make(tf32, CUBLAS_OP_T, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 1);
  ASSERT_TRUE(tf32.failed.empty()) << tf32.failed;
  EXPECT_EQ(lt_matmul_shape(cublasLtMatmulDescGetAttribute, cublasLtMatrixLayoutGetAttribute, tf32.desc, tf32.a, tf32.b,
                            tf32.d)
                ->dtype,
            "tf32");
  // A descriptor that cannot be read gives no shape: none is guessed.
  EXPECT_FALSE(lt_matmul_shape(cublasLtMatmulDescGetAttribute, refuse, tf32.desc, tf32.a, tf32.b, tf32.d));
  EXPECT_FALSE(lt_matmul_shape(cublasLtMatmulDescGetAttribute, nullptr, tf32.desc, tf32.a, tf32.b, tf32.d));
}

namespace {

redline::testing::RecorderRun run_recorder(const std::string& name, std::vector<std::string> argv,
                                           std::vector<std::pair<std::string, std::string>> env) {
  return redline::testing::run_with_recorder({PROFILE_GEMMS_CHILD, GEMMS_LIBRARY, "REDLINE_PROFILE_GEMMS"},
                                             "gemms_" + name, std::move(argv), std::move(env));
}

}  // namespace

TEST(ProfileGemms, EachCallRecordedOnceWithItsShapeAndAnExternalId) {
  const auto run = run_recorder("fake_cupti", {FAKE_CUPTI}, {{"NVTX_INJECTION64_PATH", FAKE_CUPTI}});
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end() << "\n" << run.result.output;
  const auto& calls = run.lines.gemm_calls;
  ASSERT_EQ(calls.size(), 5u) << run.result.output;  // the nested call is not among them
  const auto expect = [&](std::size_t i, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch,
                          const std::string& dtype) {
    EXPECT_EQ(calls[i].m, m) << i;
    EXPECT_EQ(calls[i].n, n) << i;
    EXPECT_EQ(calls[i].k, k) << i;
    EXPECT_EQ(calls[i].batch, batch) << i;
    EXPECT_EQ(calls[i].dtype, dtype) << i;
  };
  expect(0, 16, 8, 4, 1, "bf16");
  expect(1, 32, 16, 8, 4, "tf32");
  expect(2, 3, 5, 7, 1, "fp32");  // no handle: its math mode is the default
  expect(3, 3, 5, 7, 6, "fp32");
  expect(4, 64, 32, 128, 2, "fp8_e4m3_e5m2");
  for (std::size_t i = 1; i < calls.size(); ++i) EXPECT_NE(calls[i].external_id, calls[i - 1].external_id);
  EXPECT_EQ(calls[0].external_id >> 32, calls[4].external_id >> 32);  // the process id's half
  EXPECT_TRUE(run.lines.problems.empty()) << run.lines.problems.front();
  EXPECT_CONTAINS(run.result.output, "external ids pushed 5 popped 5");
}

TEST(ProfileGemms, WithoutCuptiCallsAreRecordedAndTheTraceSaysSo) {
  const auto run = run_recorder("no_cupti", {}, {{"NVTX_INJECTION64_PATH", ""}});
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end() << "\n" << run.result.output;
  EXPECT_EQ(run.lines.gemm_calls.size(), 5u);
  ASSERT_EQ(run.lines.problems.size(), 1u);
  EXPECT_CONTAINS(run.lines.problems[0], "no libcupti loaded from NVTX_INJECTION64_PATH");
}

namespace {

namespace fs = std::filesystem;

// A program that links no cuBLAS, run with the recorder preloaded: it
// loads `libraries`, then the caller, all RTLD_LOCAL.
redline::testing::RecorderRun run_local_caller(const std::string& name, std::vector<std::string> libraries) {
  libraries.insert(libraries.begin(), GEMMS_CALLER);
  return redline::testing::run_with_recorder({LOCAL_CALLER_CHILD, GEMMS_LIBRARY, "REDLINE_PROFILE_GEMMS"},
                                             "gemms_" + name, std::move(libraries), {{"NVTX_INJECTION64_PATH", ""}});
}

// The caller's one cublasGemmEx was recorded and reached the real cuBLAS
// (whose answer to a null handle is the one a missing entry point gets, so
// the missing one's problem line tells them apart).
void expect_forwarded_local_call(const redline::testing::RecorderRun& run) {
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end() << "\n" << run.result.output;
  ASSERT_EQ(run.lines.gemm_calls.size(), 1u);
  EXPECT_EQ(run.lines.gemm_calls[0].m, 24);
  EXPECT_EQ(run.lines.gemm_calls[0].dtype, "fp16");
  for (const std::string& problem : run.lines.problems)
    EXPECT_EQ(problem.find("was not found"), std::string::npos) << problem;
  EXPECT_CONTAINS(run.result.output, "local status " + std::to_string(CUBLAS_STATUS_NOT_INITIALIZED));
}

}  // namespace

// cuBLAS loaded by a library the program loaded with RTLD_LOCAL (PyTorch's
// extension modules load it so) is outside RTLD_NEXT's reach: the recorder
// finds the real function among the loaded libraries and forwards to it.
TEST(ProfileGemms, CublasLoadedLocallyIsStillFoundAndForwardedTo) {
  expect_forwarded_local_call(run_local_caller("local", {}));
}

// A wheel's renamed copy of cuBLAS (auditwheel's "libcublas-<hash>.so.N")
// is cuBLAS too; a library whose name only starts so, loaded before it, is
// passed over for want of the function.
TEST(ProfileGemms, ARenamedCopyOfCublasIsFoundPastALookalike) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("renamed_cublas_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path lookalike = dir / "libcublas-00000000.so.13", renamed = dir / "libcublas-3b81d170.so.13";
  fs::create_symlink(FAKE_CUPTI, lookalike);
  fs::create_symlink(fs::canonical(CUBLAS_LIBRARY), renamed);
  expect_forwarded_local_call(run_local_caller("renamed", {lookalike.string(), renamed.string()}));
  fs::remove_all(dir);
}
