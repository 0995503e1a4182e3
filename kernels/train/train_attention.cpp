// TrainAttention: the cuDNN graphs built for BSHD, or UnfusedAttention
// between BSHD<->BHSD copies.
#include "kernels/train/train_attention.cuh"

#include <cuda_bf16.h>

#include <optional>
#include <stdexcept>

#include "harness/train/activation_memory.hpp"
#include "kernels/attention_cudnn.cuh"
#include "kernels/attention_unfused.cuh"
#include "kernels/train/bhsd_transpose.cuh"
#include "kernels/train/tensor_arena.cuh"

namespace redline {


struct TrainAttention::State {
  AttentionShape shape;
  cudaStream_t stream = nullptr;
  std::optional<CudnnAttention> cudnn;
  std::optional<UnfusedAttention> unfused;
  TensorArena copies;  // unfused only
  RecordedCalls* recorder = nullptr;

  __nv_bfloat16* copy(const char* name) const { return copies.get<__nv_bfloat16>(name); }
  HeadsShape heads(std::int64_t count) const { return {shape.batch, shape.seq, count, shape.head_dim}; }
  AttentionTensors bhsd_tensors(float* lse) const;
  void to_bhsd(const AttentionTensors& t) const;
};

AttentionTensors TrainAttention::State::bhsd_tensors(float* lse) const {
  AttentionTensors b;
  b.q = copy("bhsd_q"), b.k = copy("bhsd_k"), b.v = copy("bhsd_v"), b.o = copy("bhsd_o"), b.lse = lse;
  b.d_o = copy("bhsd_d_o"), b.dq = copy("bhsd_d_q"), b.dk = copy("bhsd_d_k"), b.dv = copy("bhsd_d_v");
  return b;
}

void TrainAttention::State::to_bhsd(const AttentionTensors& t) const {
  const AttentionTensors b = bhsd_tensors(t.lse);
  bshd_to_bhsd(static_cast<const __nv_bfloat16*>(t.q), static_cast<__nv_bfloat16*>(b.q), heads(shape.heads), stream);
  bshd_to_bhsd(static_cast<const __nv_bfloat16*>(t.k), static_cast<__nv_bfloat16*>(b.k), heads(shape.kv_heads), stream);
  bshd_to_bhsd(static_cast<const __nv_bfloat16*>(t.v), static_cast<__nv_bfloat16*>(b.v), heads(shape.kv_heads), stream);
}

TrainAttention::TrainAttention(const ModelConfig& config, std::int64_t mbs, std::int64_t seq, AttentionChoice choice,
                               LtWorkspace gemm_workspace, cudaStream_t stream)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.shape.batch = mbs, s.shape.seq = seq, s.shape.heads = config.heads, s.shape.kv_heads = config.kv_heads;
  s.shape.head_dim = config.head_dim(), s.shape.causal = true;
  s.stream = stream;
  if (choice == AttentionChoice::cudnn) {
    s.cudnn.emplace(s.shape, GemmDtype::bf16, true, stream, AttentionLayout::bshd);
    if (!s.cudnn->supported()) throw std::runtime_error("cuDNN attention: " + s.cudnn->unsupported_reason());
    return;
  }
  // The copies come from the memory model's list; the score matrices, which
  // UnfusedAttention allocates itself, must be the size that list says.
  std::vector<SavedTensor> listed = unfused_attention_buffers(config, mbs, seq), copies;
  std::int64_t score_bytes = 0;
  for (SavedTensor& t : listed) {
    if (t.name.rfind("bhsd_", 0) == 0) copies.push_back(std::move(t));
    else score_bytes += t.bytes();
  }
  s.copies = TensorArena(copies);
  s.unfused.emplace(s.shape, GemmDtype::bf16, true, stream, gemm_workspace);
  if (static_cast<std::int64_t>(s.unfused->workspace_bytes()) != score_bytes)
    throw std::logic_error("TrainAttention: the unfused path's score matrices differ from the memory model's");
}

TrainAttention::~TrainAttention() = default;

void TrainAttention::record_into(RecordedCalls* calls) { state_->recorder = calls; }

void TrainAttention::forward(const AttentionTensors& t) const {
  const State& s = *state_;
  // Recorded before it runs: the replay runs with the recorder cleared.
  if (s.recorder != nullptr) s.recorder->push_back([this, t] { forward(t); });
  if (s.cudnn) return s.cudnn->forward(t);
  s.to_bhsd(t);
  const AttentionTensors b = s.bhsd_tensors(t.lse);
  s.unfused->forward(b);
  bhsd_to_bshd(static_cast<const __nv_bfloat16*>(b.o), static_cast<__nv_bfloat16*>(t.o), s.heads(s.shape.heads), s.stream);
}

void TrainAttention::backward(const AttentionTensors& t) const {
  const State& s = *state_;
  if (s.recorder != nullptr) s.recorder->push_back([this, t] { backward(t); });
  if (s.cudnn) return s.cudnn->backward(t);
  s.to_bhsd(t);
  const AttentionTensors b = s.bhsd_tensors(t.lse);
  s.unfused->forward(b);  // P back in the scores; o and lse as the forward made them
  bshd_to_bhsd(static_cast<const __nv_bfloat16*>(t.d_o), static_cast<__nv_bfloat16*>(b.d_o), s.heads(s.shape.heads),
               s.stream);
  s.unfused->backward(b);
  bhsd_to_bshd(static_cast<const __nv_bfloat16*>(b.dq), static_cast<__nv_bfloat16*>(t.dq), s.heads(s.shape.heads), s.stream);
  bhsd_to_bshd(static_cast<const __nv_bfloat16*>(b.dk), static_cast<__nv_bfloat16*>(t.dk), s.heads(s.shape.kv_heads),
               s.stream);
  bhsd_to_bshd(static_cast<const __nv_bfloat16*>(b.dv), static_cast<__nv_bfloat16*>(t.dv), s.heads(s.shape.kv_heads),
               s.stream);
}

std::int64_t TrainAttention::bytes() const {
  const State& s = *state_;
  if (s.cudnn) return static_cast<std::int64_t>(s.cudnn->workspace_bytes());
  return s.copies.bytes() + static_cast<std::int64_t>(s.unfused->workspace_bytes());
}

}  // namespace redline
