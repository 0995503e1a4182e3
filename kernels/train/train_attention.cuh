// The stack's attention on its token-major q, k, v (rows of T = mbs * seq
// tokens; q heads*d wide, k and v kv_heads*d), causal, bf16: cuDNN's fused
// SDPA reading and writing them in place (AttentionLayout::bshd), or the
// unfused path on BHSD copies (bhsd_transpose.cuh) held in the buffers
// activation_memory's unfused_attention_buffers lists.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "harness/train/model_config.hpp"
#include "kernels/attention_tensors.cuh"
#include "kernels/lt_matmul.cuh"
#include "kernels/train/recorded_calls.cuh"

namespace redline {


class TrainAttention {
 public:
  // Throws std::runtime_error with cuDNN's reason when cuDNN refuses the
  // shape; the unfused path's GEMMs use `gemm_workspace`.
  TrainAttention(const ModelConfig& config, std::int64_t mbs, std::int64_t seq, AttentionChoice choice,
                 LtWorkspace gemm_workspace, cudaStream_t stream);
  ~TrainAttention();
  TrainAttention(const TrainAttention&) = delete;
  TrainAttention& operator=(const TrainAttention&) = delete;

  // Writes o and lse (b x a x s fp32) from q, k, v.
  void forward(const AttentionTensors& t) const;
  // Writes dq, dk, dv from q, k, v, o, lse and d_o. The unfused path reruns
  // the forward first (its P is not kept between layers) into its own o copy.
  void backward(const AttentionTensors& t) const;

  // Device bytes this object allocated: cuDNN's workspace, or the unfused
  // path's copies and score matrices.
  std::int64_t bytes() const;

  // While set, every forward and backward is also appended to `calls`
  // (nullptr stops), to be timed alone afterwards.
  void record_into(RecordedCalls* calls);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace redline
