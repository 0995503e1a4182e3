// A cuBLAS or cuBLASLt call's GEMM shape (m, n, k, batch) and precision,
// named as harness/gpu/gemm_dtype names them (fp32, tf32, fp16, bf16,
// fp8_e4m3, fp8_e4m3_e5m2), so a recorded call's FLOPs meet the MAMF
// measured for the same name. Plain values and function pointers in, so it
// is tested without a GPU and without the recording library around it.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>

#include <cstdint>
#include <optional>
#include <string>

namespace redline::profile {

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string dtype;
};

// The precision the multiply runs at: the operands' type, except that fp32
// operands run as tf32 (or fp16, bf16) where the compute type allows it, or
// where `math_mode` (the handle's, cublasGetMathMode) asks for TF32 tensor
// cores and the compute type is not pedantic. Types no MAMF is measured for
// keep a name of their own (fp64, int8, cuda_type_N): their FLOPs are real,
// they only find no ceiling.
std::string gemm_dtype_name(cudaDataType a, cudaDataType b, cublasComputeType_t compute, int math_mode);

// cublasGemmEx and its strided-batched form: C (m x n) = op(A) op(B).
GemmShape gemm_ex_shape(int m, int n, int k, int batch, cudaDataType a, cudaDataType b, cublasComputeType_t compute,
                        int math_mode);

using LayoutAttributeGetter = cublasStatus_t (*)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, void*, size_t,
                                                 size_t*);
using MatmulDescAttributeGetter = cublasStatus_t (*)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, void*,
                                                     size_t, size_t*);

// cublasLtMatmul: m x n is D's (rows and columns are logical, whatever the
// memory order), k is op(A)'s columns, the batch D's. nullopt when a
// descriptor cannot be read: a shape is never guessed.
std::optional<GemmShape> lt_matmul_shape(MatmulDescAttributeGetter desc_get, LayoutAttributeGetter layout_get,
                                         cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                         cublasLtMatrixLayout_t d);

}  // namespace redline::profile
