// TrainStack: a Llama-style decoder stack (harness/train/model_config.hpp)
// that trains on one GPU in bf16 with fp32 master weights, fp32 gradients
// accumulated over micro-batches and AdamW, in one of three recompute modes.
// Its device memory is exactly the lists of harness/train/activation_memory
// (saved_per_layer per layer, saved_outside_layers, backward_working_set,
// unfused_attention_buffers on the unfused path), the state arrays
// (state_bytes, padded per tensor) and the workspaces: one cuBLASLt
// workspace every GEMM shares (and the RMSNorm weight gradients borrow
// between GEMMs) and cuDNN's own. allocated_bytes() says what that came to.
//
// Conventions (the CPU reference's, harness/train/train_reference.hpp):
// tokens and targets [mbs * seq], token t = batch_index * seq + position;
// activations [tokens, width] row-major; weights [out, in], y = x W^T; the
// loss is the mean cross-entropy over the micro-batch's tokens.
//
// Typical use (everything enqueues on the constructor's stream):
//   TrainStack stack(config, mbs, seq, Recompute::selective, AttentionChoice::cudnn, stream);
//   for (step) {
//     stack.zero_grads();
//     for (micro-batch) { stack.set_batch_device(tokens, targets); stack.enqueue_forward_backward(); }
//     stack.optimizer_step(adamw);
//     loss = stack.last_loss();  // the step's one wait: no idle GPU between micro-batches
//   }
// With gradient accumulation over n micro-batches, set_gradient_accumulation(n)
// scales each micro-batch's gradient by 1/n, so the step sees the mean.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "harness/measure/measurement.hpp"
#include "harness/train/activation_memory.hpp"
#include "harness/train/model_config.hpp"
#include "kernels/train/adamw.cuh"
#include "kernels/train/train_attention.cuh"
#include "kernels/train/train_parameters.cuh"

namespace redline {

// Milliseconds from CUDA events around each phase: the forward (embedding
// to loss) and backward of every micro-batch since the last zero_grads() (the
// micro-batches whose gradients are accumulated), summed, and the last
// optimizer step (0 before the first).
struct PhaseTimes {
  double forward_ms = 0, backward_ms = 0, optimizer_ms = 0;
  std::int64_t micro_batches = 0;  // how many forward and backward times the sums hold
};

// Device bytes the stack allocated, by what they hold.
struct AllocatedBytes {
  std::int64_t state = 0;        // bf16 weights, fp32 grads, master, m, v
  std::int64_t activations = 0;  // saved per layer, plus outside the layers
  std::int64_t working = 0;      // the backward's working set
  std::int64_t workspace = 0;    // cuBLASLt's shared workspace, cuDNN's (or the unfused path's buffers)
  std::int64_t small = 0;        // the loss scalar
  std::int64_t total() const { return state + activations + working + workspace + small; }
};

// One micro-batch's GEMM and attention calls, each timed alone
// (TrainStack::time_parts_alone): the sum of each kind's median times.
struct PartsAlone {
  double gemm_ms = 0, attention_ms = 0;
  std::int64_t gemm_calls = 0, attention_calls = 0;
};

class TrainStack {
 public:
  // Allocates everything and draws the initial weights from `seed` (the
  // reference's init_weights formula). Throws std::invalid_argument for a
  // bad config, mbs or seq; CudaError (is_out_of_memory()) when it does not
  // fit; std::runtime_error when cuDNN refuses the attention shape.
  TrainStack(const ModelConfig& config, std::int64_t mbs, std::int64_t seq, Recompute mode, AttentionChoice attention,
             cudaStream_t stream, std::uint64_t seed = 1);
  ~TrainStack();
  TrainStack(const TrainStack&) = delete;
  TrainStack& operator=(const TrainStack&) = delete;

  // The micro-batch: mbs * seq token ids and as many targets, in [0, vocab).
  // The host form checks the ids and copies synchronously; the device form
  // copies on the stream (the caller guarantees the ids).
  void set_batch(std::span<const std::int32_t> tokens, std::span<const std::int32_t> targets);
  void set_batch_device(const std::int32_t* tokens, const std::int32_t* targets);
  void set_gradient_accumulation(std::int64_t micro_batches);

  // One micro-batch's forward and backward, adding its gradients into the
  // fp32 gradients. The enqueue form returns at once; forward_backward()
  // also waits and returns the micro-batch's mean loss. Each micro-batch
  // since zero_grads() keeps its own phase timers (a pair of events each).
  void enqueue_forward_backward();
  float forward_backward();
  float last_loss() const;  // the last micro-batch's mean loss; waits for the stream

  void zero_grads();  // also starts a new accumulation's phase times
  // AdamW on every tensor from the accumulated gradients, then the bf16
  // weights refreshed from the master weights. Gradients are left as they
  // are (zero_grads() before the next accumulation).
  void optimizer_step(const AdamWSettings& settings);
  std::int64_t optimizer_steps() const;

  PhaseTimes last_phase_times() const;  // waits for the recorded events

  // One micro-batch's forward and backward with every GEMM and attention
  // call recorded, then each call enqueued again by itself and timed
  // (time_each_alone: the runner's held samples, as many as `policy` takes
  // per call): what the step's GEMMs and attention take measured alone, on
  // the step's own plans and tensors. It changes the gradients (the
  // weight-gradient GEMMs accumulate again), so it comes after the figures
  // that need them. Synchronous.
  PartsAlone time_parts_alone(const MeasurementPolicy& policy);
  AllocatedBytes allocated() const;
  std::int64_t allocated_bytes() const { return allocated().total(); }

  // The weights in the reference's order and names; host copies of a
  // tensor's fp32 master weights and gradient, and loading master weights
  // (the bf16 copy follows). Synchronous.
  const std::vector<ParameterTensor>& tensors() const;
  std::vector<float> master_weight(std::size_t index) const;
  std::vector<float> gradient(std::size_t index) const;
  void load_weight(std::size_t index, std::span<const float> values);

  const ModelConfig& config() const;
  std::int64_t tokens() const;  // mbs * seq

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace redline
