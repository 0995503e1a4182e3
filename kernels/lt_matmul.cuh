// A strided-batched matmul through cuBLASLt on the caller's pointers: the
// plan (descriptor, layouts with batch count and strides, the heuristic's
// algorithm, its workspace) is made once, then enqueued any number of times
// on any buffers of the described shape. LtGemm owns rotating buffers of
// its own; attention's GEMMs run on tensors that already exist, hence this.
//
// Row-major throughout, as the attention tensors are stored (BHSD): for each
// batch i < batch,
//   C_i (m x n) = alpha * op(A_i) (m x k) * op(B_i) (k x n)
//   D_i (m x n) = alpha * op(A_i) op(B_i) + beta * C_i
// A_i is stored m x k (k x m when transpose_a), B_i k x n (n x k when
// transpose_b), C_i and D_i m x n, every matrix dense (its leading dimension
// is its stored column count), A_i at a + i * stride_a elements, and so on.
// fp32 accumulation and scale (CUBLAS_COMPUTE_32F). beta = 1 with D = C
// accumulates (a training step's fp32 weight gradients over micro-batches);
// beta = 1 with C another tensor fuses a residual add into the epilogue.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "harness/gpu/gemm_dtype.hpp"
#include "kernels/gemm_lt.cuh"

namespace redline {

// How A, B (inputs, same type) and C are stored.
enum class MatmulElement { fp16, bf16, fp32 };
const char* matmul_element_name(MatmulElement element);

struct StridedMatmul {
  std::int64_t m = 1, n = 1, k = 1;
  bool transpose_a = false, transpose_b = false;
  std::int64_t batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between consecutive batches
  MatmulElement inputs = MatmulElement::bf16;
  MatmulElement output = MatmulElement::bf16;
  float alpha = 1.0f;
  float beta = 0.0f;  // C is read only when non-zero
};

// A workspace several plans share: they run one at a time on one stream,
// so one buffer serves them all (a training step has a dozen GEMM shapes
// and one 32 MiB cuBLASLt workspace). Not owned.
struct LtWorkspace {
  void* data = nullptr;
  std::size_t bytes = 0;
};

// "bf16->bf16 m=4096 n=4096 k=128 A B^T batch=64".
std::string describe(const StridedMatmul& problem);
// 2 * m * n * k * batch.
double matmul_flop_count(const StridedMatmul& problem);

// The problem as the GEMM cases run it (column-major, harness/gpu/gemm_dtype.hpp):
// C^T = op(B)^T op(A)^T, so its M is this N, its N this M, its A this B.
// A transposed here is B transposed there (nt), B transposed here is A
// transposed there (tn). nullopt where the GEMM cases have no such GEMM: both
// operands transposed, batches that are not dense and back to back, an
// output type other than the inputs', or beta other than 0 (the cases
// write C of its input type, with beta 0).
struct ColumnMajorGemm {
  GemmLayout layout = GemmLayout::tn;
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  GemmBatch strides() const { return dense_batch(batch, m, n, k); }
};
std::optional<ColumnMajorGemm> column_major_equivalent(const StridedMatmul& problem);

// Throws std::invalid_argument for sizes below 1 or inputs stored as fp32
// (the attention paths never need it), GemmUnsupported when cuBLASLt offers
// no algorithm, CublasError / CudaError for other failures (out of memory
// for the workspace included). Creates no stream; enqueue takes one.
class LtMatmul {
 public:
  explicit LtMatmul(const StridedMatmul& problem, std::size_t max_workspace_bytes = std::size_t{32} << 20);
  // Uses `shared` (which must outlive the plan) instead of a workspace of
  // its own; the algorithm is chosen to fit shared.bytes.
  LtMatmul(const StridedMatmul& problem, LtWorkspace shared);
  ~LtMatmul();
  LtMatmul(LtMatmul&&) noexcept;
  LtMatmul& operator=(LtMatmul&&) noexcept;

  // Enqueues the batched matmul on `stream`; never synchronizes. The
  // pointers must hold the described batches. The plan's workspace is
  // shared by its calls, so one plan runs on one stream at a time.
  void enqueue(const void* a, const void* b, void* c, cudaStream_t stream) const;
  // D = alpha op(A) op(B) + beta C with C and D distinct (same shape and
  // type); c may equal d, which is what the overload above does.
  void enqueue(const void* a, const void* b, const void* c, void* d, cudaStream_t stream) const;

  const StridedMatmul& problem() const;
  const GemmAlgorithm& algorithm() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace redline
