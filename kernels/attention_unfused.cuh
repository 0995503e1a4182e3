// Attention as separate kernels, the way an unfused framework runs it:
// cuBLASLt GEMMs for the products and one simple kernel per row for the
// softmax and its gradient. It is the baseline the fused (cuDNN) path is
// compared with, and the GPU reference large shapes are checked against.
//
//   forward   S = scale * Q K^T               (GEMM, S in the io dtype)
//             P = softmax(S), causal: column > row masked; fp32 row
//                 statistics, LSE written     (kernel, P overwrites S)
//             O = P V                         (GEMM)
//   backward  dV = P^T dO                     (GEMM)
//             dP = dO V^T                     (GEMM)
//             dS = scale * P o (dP - rowsum(dO o O))   (kernel, over dP)
//             dQ = dS K,  dK = dS^T Q         (GEMMs)
//
// GQA: the query heads of one KV head are consecutive in BHSD, so a group's
// queries form one (g*s) x d matrix, g = a_q / a_kv. Every GEMM is batched
// over b * a_kv groups with M (or K) = g*s, and dK, dV sum over the group's
// heads inside the GEMM's K dimension: no reduction kernel, no K/V copies.
//
// Memory: it owns S/P (b * a_q * s^2 elements in the io dtype) and, with the
// backward, dP/dS as much again: it grows with s^2, which is the point of
// comparing with a fused kernel. backward() reads the P the last forward()
// left there (what a training framework saves for the backward).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "harness/attention/attention_model.hpp"
#include "harness/attention/attention_shape.hpp"
#include "harness/gpu/gemm_dtype.hpp"
#include "kernels/attention_tensors.cuh"
#include "kernels/lt_matmul.cuh"

namespace redline {

// One of the unfused path's GEMMs: "scores", "output" (forward), "grad_v",
// "grad_p", "grad_q", "grad_k" (backward), with its batched shape.
struct UnfusedGemm {
  std::string name;
  StridedMatmul problem;
  bool backward = false;
};

// The six GEMMs for `shape` in `dtype` (bf16 or fp16), in execution order;
// pure arithmetic, no device needed. Throws std::invalid_argument for an
// invalid shape or dtype.
std::vector<UnfusedGemm> unfused_attention_gemms(const AttentionShape& shape, GemmDtype dtype);

// Bytes of the score workspaces: S/P, plus dP/dS with the backward.
std::size_t unfused_attention_workspace_bytes(const AttentionShape& shape, GemmDtype dtype, bool with_backward);

// Plans every GEMM (GemmUnsupported when cuBLASLt has none) and allocates
// the workspaces (CudaError, is_out_of_memory(), when they do not fit).
// With `shared_workspace` the GEMMs use it instead of one cuBLASLt
// workspace each (a training step shares one among all its GEMMs).
// forward/backward enqueue on the constructor's stream, never synchronize,
// and read and write the caller's tensors (attention_tensors.cuh).
class UnfusedAttention {
 public:
  UnfusedAttention(const AttentionShape& shape, GemmDtype dtype, bool with_backward, cudaStream_t stream,
                   LtWorkspace shared_workspace = {});
  ~UnfusedAttention();
  UnfusedAttention(const UnfusedAttention&) = delete;
  UnfusedAttention& operator=(const UnfusedAttention&) = delete;

  void forward(const AttentionTensors& tensors) const;   // writes o and lse
  void backward(const AttentionTensors& tensors) const;  // writes dq, dk, dv; needs the last forward's P

  // GEMM `index` of gemms() (a backward one only when planned with the
  // backward): the tensors it reads and writes, and the GEMM enqueued alone
  // as forward/backward run it, to be checked or timed by itself.
  struct Operands {
    const void* a = nullptr;
    const void* b = nullptr;
    void* c = nullptr;
  };
  Operands gemm_operands(std::size_t index, const AttentionTensors& tensors) const;
  void enqueue_gemm(std::size_t index, const AttentionTensors& tensors) const;
  const LtMatmul& gemm_plan(std::size_t index) const;

  const std::vector<UnfusedGemm>& gemms() const;
  std::size_t workspace_bytes() const;  // S/P and dP/dS, without cuBLASLt's own workspaces

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace redline
