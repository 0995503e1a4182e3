// A profiled program for the GEMM recorder's test: it calls each GEMM entry
// point the recorder stands in for, as a program linked to cuBLAS and
// cuBLASLt does, with a null handle. Without a GPU the real calls fail,
// which is fine: the recorder records before it forwards. Then one call
// made as if from inside a recorded call (the recorder's own hook), which
// must not be recorded again.
//   profile_gemms_child [FAKE_CUPTI]
// FAKE_CUPTI is loaded first, as the injection library loads libcupti, and
// the external ids it was given are printed. (cuBLAS loaded outside the
// global scope is profile_local_caller_child's: this program links it.)
#include <cublasLt.h>
#include <cublas_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>

#include "tests/fake_cupti_client.hpp"

namespace {

cublasLtMatrixLayout_t layout(cudaDataType type, std::uint64_t rows, std::uint64_t cols, int batch = 1) {
  cublasLtMatrixLayout_t l = nullptr;
  if (cublasLtMatrixLayoutCreate(&l, type, rows, cols, static_cast<std::int64_t>(rows)) != CUBLAS_STATUS_SUCCESS)
    return nullptr;
  cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch));
  return l;
}

// D (64 x 32) = A^T B with A stored 128 x 64: k = 128, fp8 e4m3 x e5m2.
cublasStatus_t lt_call() {
  cublasLtMatmulDesc_t desc = nullptr;
  if (cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const cublasOperation_t t = CUBLAS_OP_T;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t));
  cublasLtMatrixLayout_t a = layout(CUDA_R_8F_E4M3, 128, 64, 2), b = layout(CUDA_R_8F_E5M2, 128, 32, 2);
  cublasLtMatrixLayout_t d = layout(CUDA_R_16BF, 64, 32, 2);
  const float one = 1, zero = 0;
  const cublasStatus_t status = cublasLtMatmul(nullptr, desc, &one, nullptr, a, nullptr, b, &zero, nullptr, d, nullptr,
                                               d, nullptr, nullptr, 0, nullptr);
  cublasLtMatrixLayoutDestroy(a), cublasLtMatrixLayoutDestroy(b), cublasLtMatrixLayoutDestroy(d);
  cublasLtMatmulDescDestroy(desc);
  return status;
}

void gemm_ex_call() {
  const float one = 1, zero = 0;
  cublasGemmEx(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 16, 8, 4, &one, nullptr, CUDA_R_16BF, 16, nullptr, CUDA_R_16BF, 4,
               &zero, nullptr, CUDA_R_16BF, 16, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

}  // namespace

int main(int argc, char** argv) {
  redline::testing::FakeExternalIds external_ids = nullptr;
  if (argc > 1 && (external_ids = redline::testing::load_fake_cupti(argv[1])) == nullptr) return 3;
  const float one = 1, zero = 0;
  gemm_ex_call();
  cublasGemmStridedBatchedEx(nullptr, CUBLAS_OP_T, CUBLAS_OP_N, 32, 16, 8, &one, nullptr, CUDA_R_32F, 8, 256, nullptr,
                             CUDA_R_32F, 8, 128, &zero, nullptr, CUDA_R_32F, 32, 512, 4, CUBLAS_COMPUTE_32F_FAST_TF32,
                             CUBLAS_GEMM_DEFAULT);
  cublasSgemm_v2(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 3, 5, 7, &one, nullptr, 3, nullptr, 7, &zero, nullptr, 3);
  cublasSgemmStridedBatched(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 3, 5, 7, &one, nullptr, 3, 21, nullptr, 7, 35, &zero,
                            nullptr, 3, 15, 6);
  std::printf("lt status %d\n", static_cast<int>(lt_call()));
  using Nested = void (*)(void (*)());
  const auto nested = reinterpret_cast<Nested>(dlsym(RTLD_DEFAULT, "redline_profile_gemms_nested_for_test"));
  if (nested == nullptr) return 4;
  nested(gemm_ex_call);
  if (external_ids != nullptr) redline::testing::print_external_ids(external_ids);
  return 0;
}
