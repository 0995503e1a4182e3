// libredline_profile_gemms.so: preloaded into a profiled program
// (LD_PRELOAD, `redline profile --gemm-shapes`), it stands in for cuBLAS's
// and cuBLASLt's GEMM entry points. Each call's shape and precision is
// written to the file REDLINE_PROFILE_GEMMS names (a `gemmcall` line, in the
// trace format) before the call is forwarded to the real function, and the
// call runs inside a CUPTI external-correlation id, so the injection library's
// trace ties the kernels it launched to the line (harness/profile/gemm_calls).
//
// It links neither cuBLAS nor cuBLASLt: a preloaded library's own
// dependencies load first, and would put the toolkit's copy ahead of the one
// the program ships (a framework's wheel). Everything it calls of theirs,
// and of CUPTI's, is looked up at run time. Like the injection library it
// must never take the program down: a failure is a `problem` line, and the
// call is forwarded untouched (call_recorder.hpp: what it shares with the
// NCCL recorder).
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "harness/profile/trace_file.hpp"
#include "kernels/profile/call_recorder.hpp"
#include "kernels/profile/gemm_shapes.hpp"

namespace redline::profile {
namespace {

CallRecorder& recorder() {
  static CallRecorder* const instance = new CallRecorder(
      {.file_variable = "REDLINE_PROFILE_GEMMS",
       .id_tag = 0,
       .without_cupti = "GEMM calls are recorded without their kernels, so their time is unknown"});
  return *instance;
}

std::atomic<std::int64_t> g_unread{0};  // cublasLtMatmul calls whose descriptors could not be read

// What could not be recorded, said once at the end.
void write_unread_at_exit() {
  const std::int64_t unread = g_unread.load();
  if (unread > 0 && recorder().recording())
    recorder().write(problem_line(std::to_string(unread) + " cublasLtMatmul calls whose descriptors could not be "
                                                           "read were not recorded: their FLOPs are missing"));
}

// The call's line, and its id (0: not recorded, counted as unread).
std::int64_t record(const std::optional<GemmShape>& shape) {
  if (!shape) {
    static const bool registered = std::atexit(write_unread_at_exit) == 0;
    (void)registered;
    g_unread.fetch_add(1);
    return 0;
  }
  const std::int64_t id = recorder().next_id();
  recorder().write(gemm_call_line({id, shape->m, shape->n, shape->k, shape->batch, shape->dtype}));
  return id;
}

// Records the shape `shape_of` reads, then forwards inside the call's
// external-correlation id. All of it runs with the depth raised, so what
// it calls of ours (cuBLAS's own cuBLASLt calls) forwards only. Out of
// memory while recording, the call is forwarded unrecorded.
template <typename ShapeOf, typename Forward>
cublasStatus_t recorded(ShapeOf shape_of, Forward forward) {
  const CallDepth depth;
  std::int64_t id = 0;
  try {
    id = record(shape_of());
  } catch (...) {
  }
  return recorder().correlated(id, forward);
}

bool outermost() { return records_call(recorder()); }

constexpr const char* kCublas = "libcublas";
constexpr const char* kCublasLt = "libcublasLt";

template <typename Fn>
Fn real(const char* name, const char* library) {
  return recorder().real<Fn>(name, library);
}

// The handle's math mode; the default where cuBLAS cannot say (a handle
// not made yet), which names fp32 operands fp32.
int math_mode(cublasHandle_t handle) {
  using Fn = cublasStatus_t (*)(cublasHandle_t, cublasMath_t*);
  static const Fn get = real<Fn>("cublasGetMathMode", kCublas);
  cublasMath_t mode = CUBLAS_DEFAULT_MATH;
  if (get == nullptr || get(handle, &mode) != CUBLAS_STATUS_SUCCESS) return CUBLAS_DEFAULT_MATH;
  return static_cast<int>(mode);
}

}  // namespace
}  // namespace redline::profile

using namespace redline::profile;

#define REDLINE_EXPORT extern "C" __attribute__((visibility("default")))

REDLINE_EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                           int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                           int lda, const void* B, cudaDataType Btype, int ldb, const void* beta,
                                           void* C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                           cublasGemmAlgo_t algo) {
  using Fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  static const Fn next = real<Fn>("cublasGemmEx", kCublas);
  if (next == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto forward = [&] {
    return next(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType,
                algo);
  };
  if (!outermost()) return forward();
  return recorded([&] { return gemm_ex_shape(m, n, k, 1, Atype, Btype, computeType, math_mode(handle)); }, forward);
}

REDLINE_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void* alpha,
    const void* A, cudaDataType Atype, int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
    long long int strideB, const void* beta, void* C, cudaDataType Ctype, int ldc, long long int strideC,
    int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  using Fn =
      cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
                         cudaDataType, int, long long int, const void*, cudaDataType, int, long long int, const void*,
                         void*, cudaDataType, int, long long int, int, cublasComputeType_t, cublasGemmAlgo_t);
  static const Fn next = real<Fn>("cublasGemmStridedBatchedEx", kCublas);
  if (next == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto forward = [&] {
    return next(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype,
                ldc, strideC, batchCount, computeType, algo);
  };
  if (!outermost()) return forward();
  return recorded([&] { return gemm_ex_shape(m, n, k, batchCount, Atype, Btype, computeType, math_mode(handle)); },
                  forward);
}

REDLINE_EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                             int m, int n, int k, const float* alpha, const float* A, int lda,
                                             const float* B, int ldb, const float* beta, float* C, int ldc) {
  using Fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,
                                const float*, int, const float*, int, const float*, float*, int);
  static const Fn next = real<Fn>("cublasSgemm_v2", kCublas);
  if (next == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto forward = [&] { return next(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc); };
  if (!outermost()) return forward();
  return recorded(
      [&] { return gemm_ex_shape(m, n, k, 1, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, math_mode(handle)); },
      forward);
}

REDLINE_EXPORT cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                        cublasOperation_t transb, int m, int n, int k,
                                                        const float* alpha, const float* A, int lda,
                                                        long long int strideA, const float* B, int ldb,
                                                        long long int strideB, const float* beta, float* C, int ldc,
                                                        long long int strideC, int batchCount) {
  using Fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,
                                const float*, int, long long int, const float*, int, long long int, const float*,
                                float*, int, long long int, int);
  static const Fn next = real<Fn>("cublasSgemmStridedBatched", kCublas);
  if (next == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto forward = [&] {
    return next(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,
                batchCount);
  };
  if (!outermost()) return forward();
  return recorded(
      [&] { return gemm_ex_shape(m, n, k, batchCount, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, math_mode(handle)); },
      forward);
}

REDLINE_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                                             const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
                                             const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                                             const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                                             cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
                                             void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream) {
  using Fn =
      cublasStatus_t (*)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*, cublasLtMatrixLayout_t,
                         const void*, cublasLtMatrixLayout_t, const void*, const void*, cublasLtMatrixLayout_t, void*,
                         cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t);
  static const Fn next = real<Fn>("cublasLtMatmul", kCublasLt);
  if (next == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto forward = [&] {
    return next(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
                workspaceSizeInBytes, stream);
  };
  if (!outermost()) return forward();
  static const auto desc_get = real<MatmulDescAttributeGetter>("cublasLtMatmulDescGetAttribute", kCublasLt);
  static const auto layout_get = real<LayoutAttributeGetter>("cublasLtMatrixLayoutGetAttribute", kCublasLt);
  return recorded([&] { return lt_matmul_shape(desc_get, layout_get, computeDesc, Adesc, Bdesc, Ddesc); }, forward);
}

// For the tests: runs `inside` as a recorded call's forwarding runs it, so a
// GEMM entry point it calls is forwarded without a record of its own (real
// nesting, cuBLAS into cuBLASLt, needs a GPU).
REDLINE_EXPORT void redline_profile_gemms_nested_for_test(void (*inside)()) {
  const CallDepth depth;
  inside();
}
