#include "kernels/profile/gemm_shapes.hpp"

namespace redline::profile {
namespace {

// The handle's math mode may carry flags (CUBLAS_MATH_DISALLOW_REDUCED_
// PRECISION_REDUCTION) above the mode itself.
constexpr int kMathModeMask = 0xf;

std::string fp32_name(cublasComputeType_t compute, int math_mode) {
  switch (compute) {
    case CUBLAS_COMPUTE_32F_FAST_TF32: return "tf32";
    case CUBLAS_COMPUTE_32F_FAST_16F: return "fp16";
    case CUBLAS_COMPUTE_32F_FAST_16BF: return "bf16";
    case CUBLAS_COMPUTE_32F: return (math_mode & kMathModeMask) == CUBLAS_TF32_TENSOR_OP_MATH ? "tf32" : "fp32";
    default: return "fp32";  // pedantic, or emulated from bf16 pieces: the fp32 result at fp32's rate or below
  }
}

template <typename Value, typename Getter, typename Object, typename Attribute>
bool read_attribute(Getter get, Object object, Attribute attribute, Value& value) {
  std::size_t written = 0;
  return get(object, attribute, &value, sizeof(value), &written) == CUBLAS_STATUS_SUCCESS && written == sizeof(value);
}

}  // namespace

std::string gemm_dtype_name(cudaDataType a, cudaDataType b, cublasComputeType_t compute, int math_mode) {
  switch (a) {
    case CUDA_R_32F: return fp32_name(compute, math_mode);
    case CUDA_R_16F: return "fp16";
    case CUDA_R_16BF: return "bf16";
    case CUDA_R_8F_E4M3: return b == CUDA_R_8F_E5M2 ? "fp8_e4m3_e5m2" : "fp8_e4m3";
    // Mixed FP8 in either order is one rate: a row-major caller (PyTorch)
    // swaps the operands, so its backward GEMMs come as e5m2 x e4m3.
    case CUDA_R_8F_E5M2: return b == CUDA_R_8F_E4M3 ? "fp8_e4m3_e5m2" : "fp8_e5m2";
    case CUDA_R_64F: return "fp64";
    case CUDA_R_8I: return "int8";
    default: return "cuda_type_" + std::to_string(static_cast<int>(a));
  }
}

GemmShape gemm_ex_shape(int m, int n, int k, int batch, cudaDataType a, cudaDataType b, cublasComputeType_t compute,
                        int math_mode) {
  return {m, n, k, batch, gemm_dtype_name(a, b, compute, math_mode)};
}

std::optional<GemmShape> lt_matmul_shape(MatmulDescAttributeGetter desc_get, LayoutAttributeGetter layout_get,
                                         cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                         cublasLtMatrixLayout_t d) {
  if (desc_get == nullptr || layout_get == nullptr) return std::nullopt;
  std::int32_t compute = 0, trans_a = CUBLAS_OP_N;
  std::uint32_t a_type = 0, b_type = 0;
  std::uint64_t a_rows = 0, a_cols = 0, d_rows = 0, d_cols = 0;
  std::int32_t batch = 1;
  const bool read = read_attribute(desc_get, desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, compute) &&
                    read_attribute(desc_get, desc, CUBLASLT_MATMUL_DESC_TRANSA, trans_a) &&
                    read_attribute(layout_get, a, CUBLASLT_MATRIX_LAYOUT_TYPE, a_type) &&
                    read_attribute(layout_get, b, CUBLASLT_MATRIX_LAYOUT_TYPE, b_type) &&
                    read_attribute(layout_get, a, CUBLASLT_MATRIX_LAYOUT_ROWS, a_rows) &&
                    read_attribute(layout_get, a, CUBLASLT_MATRIX_LAYOUT_COLS, a_cols) &&
                    read_attribute(layout_get, d, CUBLASLT_MATRIX_LAYOUT_ROWS, d_rows) &&
                    read_attribute(layout_get, d, CUBLASLT_MATRIX_LAYOUT_COLS, d_cols) &&
                    read_attribute(layout_get, d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch);
  if (!read) return std::nullopt;
  const std::uint64_t k = trans_a == CUBLAS_OP_N ? a_cols : a_rows;
  // cuBLASLt has no math mode: the compute type alone says how fp32 runs.
  return GemmShape{static_cast<std::int64_t>(d_rows), static_cast<std::int64_t>(d_cols), static_cast<std::int64_t>(k),
                   batch,
                   gemm_dtype_name(static_cast<cudaDataType>(a_type), static_cast<cudaDataType>(b_type),
                                   static_cast<cublasComputeType_t>(compute), CUBLAS_DEFAULT_MATH)};
}

}  // namespace redline::profile
