// A library that calls cuBLAS, for the GEMM recorder's test: loaded with
// RTLD_LOCAL, as a framework's extension module is, so cuBLAS is outside
// the program's global scope, where the recorder must still find it.
#include <cublas_api.h>

extern "C" __attribute__((visibility("default"))) int caller_gemm_ex() {
  const float one = 1, zero = 0;
  return static_cast<int>(cublasGemmEx(nullptr, CUBLAS_OP_N, CUBLAS_OP_T, 24, 12, 6, &one, nullptr, CUDA_R_16F, 24,
                                       nullptr, CUDA_R_16F, 12, &zero, nullptr, CUDA_R_16F, 24, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT));
}
