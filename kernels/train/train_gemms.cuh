// The training step's GEMMs through cuBLASLt on one shared workspace: the
// three products of a linear layer y = x W^T (W [out, in] as nn.Linear;
// activations [rows, width] row-major). Plans are made on first use of a
// shape and kept; every plan shares the one workspace, so all run on one
// stream. The RMSNorm weight gradients borrow it between GEMMs on that
// stream for their partial sums (rmsnorm.cuh).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>

#include "kernels/device_buffer.cuh"
#include "kernels/lt_matmul.cuh"
#include "kernels/train/recorded_calls.cuh"

namespace redline {

class TrainGemms {
 public:
  explicit TrainGemms(std::size_t workspace_bytes);

  // y = x W^T, plus `residual` (same shape as y, may be null) added in the
  // GEMM's epilogue: a layer's residual connection costs no kernel of its own.
  void linear(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, std::int64_t rows, std::int64_t in,
              std::int64_t out, const __nv_bfloat16* residual, cudaStream_t stream);
  // d_x = d_y W, or d_x += d_y W with `accumulate` (Q, K, V's gradients meet
  // in one d_n).
  void data_grad(const __nv_bfloat16* d_y, const __nv_bfloat16* w, __nv_bfloat16* d_x, std::int64_t rows,
                 std::int64_t in, std::int64_t out, bool accumulate, cudaStream_t stream);
  // d_w += d_y^T x into the fp32 gradient (beta = 1: accumulates over
  // micro-batches until zeroed).
  void weight_grad(const __nv_bfloat16* d_y, const __nv_bfloat16* x, float* d_w, std::int64_t rows, std::int64_t in,
                   std::int64_t out, cudaStream_t stream);

  LtWorkspace workspace() const { return {workspace_.data(), workspace_.bytes()}; }
  std::size_t workspace_bytes() const { return workspace_.bytes(); }

  // While set, every GEMM enqueued is also appended to `calls` (nullptr
  // stops), to be timed alone afterwards.
  void record_into(RecordedCalls* calls) { recorder_ = calls; }

 private:
  const LtMatmul& plan(const StridedMatmul& problem);
  void enqueue(const LtMatmul& plan, const void* a, const void* b, const void* c, void* d, cudaStream_t stream);

  DeviceBuffer<std::byte> workspace_;
  // std::map: a plan never moves, so a recorded call may hold it.
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, bool, bool, int, float>, LtMatmul> plans_;
  RecordedCalls* recorder_ = nullptr;
};

}  // namespace redline
