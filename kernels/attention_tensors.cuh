// The tensors of one attention problem on the device, as every attention
// path (unfused, cuDNN) and the checks take them, and an owner that
// allocates them with random inputs for a benchmark case or a test.
// Layout: dense BHSD (harness/attention/attention_shape.hpp); Q, O, dO, dQ
// have a_q heads, K, V, dK, dV a_kv heads; LSE is fp32, b x a_q x s.
// Element type: the dtype's (bf16, fp16 or fp8 e4m3), one for all of them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "harness/attention/attention_shape.hpp"
#include "harness/gpu/gemm_dtype.hpp"

namespace redline {

struct AttentionTensors {
  void* q = nullptr;
  void* k = nullptr;
  void* v = nullptr;
  void* o = nullptr;       // forward's output, backward's input
  float* lse = nullptr;    // natural-log log-sum-exp of each row's scaled, masked scores
  void* d_o = nullptr;     // backward only, like the three below
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
};

// The element types attention runs in: bf16, fp16, fp8_e4m3 (cuDNN only).
// Throws std::invalid_argument naming the dtype otherwise.
std::size_t attention_element_bytes(GemmDtype dtype);

// Owns every tensor of one problem. Q, K, V (and dO with backward) are
// random in [-1, 1), never zero, from `seed`; the outputs start as NaN
// (all-ones bytes), so an element a path does not write fails its check.
// Allocation throws CudaError (is_out_of_memory()). Fills run on `stream`
// and are finished when the constructor returns.
class AttentionBuffers {
 public:
  AttentionBuffers(const AttentionShape& shape, GemmDtype dtype, bool with_backward, std::uint64_t seed,
                   cudaStream_t stream);
  ~AttentionBuffers();
  AttentionBuffers(const AttentionBuffers&) = delete;
  AttentionBuffers& operator=(const AttentionBuffers&) = delete;

  const AttentionTensors& tensors() const;
  const AttentionShape& shape() const;
  GemmDtype dtype() const;
  std::size_t bytes() const;  // every tensor together

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace redline
