// One GEMM through cuBLASLt, ready to be timed: random inputs in rotating
// buffer sets (so small shapes are not timed from L2), the algorithm
// cuBLASLt's heuristic picks (or one of its top candidates), what that
// algorithm is (tile, split-K, cuBLASLt's own wave count), and a check of
// the result against a reference computed from the same inputs.
//
// Layouts and dtypes: harness/gpu/gemm_dtype.hpp. All accumulate in fp32:
//   fp32  CUBLAS_COMPUTE_32F,           A/B/C CUDA_R_32F
//   tf32  CUBLAS_COMPUTE_32F_FAST_TF32, A/B/C CUDA_R_32F
//   fp16  CUBLAS_COMPUTE_32F,           A/B/C CUDA_R_16F
//   bf16  CUBLAS_COMPUTE_32F,           A/B/C CUDA_R_16BF
//   fp8_e4m3       CUBLAS_COMPUTE_32F, A/B CUDA_R_8F_E4M3, C/D CUDA_R_16BF
//   fp8_e4m3_e5m2  CUBLAS_COMPUTE_32F, A E4M3, B E5M2,     C/D CUDA_R_16BF
// FP8 passes its per-tensor scales through CUBLASLT_MATMUL_DESC_A/B_SCALE_POINTER
// (device floats, deliberately not 1 so the check proves they are applied).
// alpha = 1, beta = 0. Layouts tn, nn and nt, optionally strided-batched.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "harness/gpu/gemm_dtype.hpp"
#include "harness/gpu/gemm_model.hpp"
#include "kernels/gemm_reference.cuh"
#include "kernels/runner/gpu_case.hpp"

namespace redline {

// cuBLASLt offers no algorithm for this shape, dtype and layout, or the
// combination is one redline knows it refuses (gemm_unsupported_reason).
// The message says which. Distinct from CudaError: a sweep records it as an
// error row and moves on.
class GemmUnsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct GemmOptions {
  GemmDtype dtype = GemmDtype::bf16;
  GemmLayout layout = GemmLayout::tn;
  // Independent GEMMs of the shape in one strided-batched call, each
  // matrix dense and the batches back to back (dense_batch): what
  // attention's per-head GEMMs are. A buffer set holds every batch.
  std::int64_t batch = 1;
  // cuBLASLt workspace. 32 MiB is what PyTorch gives cuBLASLt on Hopper;
  // split-K and stream-K kernels need it.
  std::size_t workspace_bytes = std::size_t{32} << 20;
  // Buffer sets rotate until their combined A, B and C bytes reach this, so
  // consecutive GEMMs never find their operands in L2. 0: twice the
  // device's L2 size. Why twice: L2 is not a fully associative LRU cache.
  // Addresses are hashed onto slices and sets, replacement is not strict
  // LRU, and on Hopper and Blackwell the L2 is split into two partitions
  // that may both hold a line, so cycling through exactly L2-size bytes can
  // leave part of the previous operands resident; twice that evicts them
  // with near certainty.
  std::size_t min_rotation_bytes = 0;
  // A bound on allocations for tiny shapes (a 64^3 bf16 set is 24 KiB).
  // Where it cuts the rotation short of min_rotation_bytes the operands are
  // partly L2-resident, and rotation_bytes() says so: the caller notes it.
  int max_buffer_sets = 4096;
  // How many of cuBLASLt's heuristic candidates to keep (1: the heuristic's
  // first choice, which is what torch.matmul runs).
  int heuristic_candidates = 1;
  std::uint64_t seed = 1;
};

// What the selected algorithm is. -1 / nullopt: cuBLASLt did not say.
struct GemmAlgorithm {
  int candidate = 0;             // index among the heuristic's candidates
  int algo_id = -1;              // CUBLASLT_ALGO_CONFIG_ID
  int tile_id = -1;              // CUBLASLT_ALGO_CONFIG_TILE_ID
  std::optional<TileShape> tile; // tile_from_cublaslt_id(tile_id)
  int split_k = 1;               // CUBLASLT_ALGO_CONFIG_SPLITK_NUM (1: none)
  int stages_id = -1;            // CUBLASLT_ALGO_CONFIG_STAGES_ID
  int cluster_shape_id = -1;     // CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID (Hopper+)
  float heuristic_waves = 0;     // cublasLtMatmulHeuristicResult_t::wavesCount
  std::size_t workspace_bytes = 0;
};

struct GemmCheck {
  double relative_error = 0;        // ||C - R||_F / ||R||_F
  std::int64_t nonfinite = 0;       // NaN or Inf elements of C
  double tolerance = 0;             // gemm_dtype_info(dtype).tolerance
  bool passed() const { return nonfinite == 0 && relative_error <= tolerance; }
  // The case runner's verdict, `rel_error` its figure; a failure's message
  // starts with `what` (which GEMM) where given.
  CaseCheck case_check(const std::string& what = "") const;
};

// A reference comparison judged by the dtype's tolerance.
GemmCheck gemm_check(GemmDtype dtype, const ReferenceDifference& difference);

// Uses the current device and the given stream. The constructor allocates
// and fills every buffer set (random values in [-1, 1), never zero), asks
// the heuristic and selects candidate 0; it synchronizes before returning.
// Throws GemmUnsupported (see above), UsageError never (validation is the
// caller's), CudaError for CUDA failures (is_out_of_memory() when the
// buffers do not fit: a sweep's "oom"), std::runtime_error naming the
// cuBLASLt call and status for other cuBLASLt failures.
class LtGemm {
 public:
  LtGemm(std::int64_t m, std::int64_t n, std::int64_t k, const GemmOptions& options, cudaStream_t stream);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  int candidate_count() const;
  void select_candidate(int candidate);  // throws std::out_of_range
  const GemmAlgorithm& algorithm() const;

  int buffer_sets() const;
  // Enqueues one GEMM on buffer set `set % buffer_sets()`; never synchronizes.
  void enqueue(int set) const;

  // Runs the selected algorithm on buffer set `set`, computes the reference
  // (a tiled fp32 kernel on the GPU over the same stored inputs, scales
  // applied), compares, synchronizes and returns the result.
  GemmCheck verify(int set = 0) const;

  double flop_count() const;  // 2*M*N*K*batch
  std::size_t bytes_per_set() const;
  // Bytes of A, B and C the rotation cycles through: buffer_sets() x bytes_per_set().
  std::size_t rotation_bytes() const { return static_cast<std::size_t>(buffer_sets()) * bytes_per_set(); }
  cudaStream_t stream() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// cuBLASLt's version as "13.1.0" (cublasLtGetVersion).
std::string cublaslt_version();

}  // namespace redline
