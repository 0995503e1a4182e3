// The stack's parameters and their training state, each in one flat device
// array with every tensor at the same offset: bf16 compute weights, fp32
// gradients (accumulated over micro-batches), fp32 master weights and
// AdamW's fp32 m and v: harness/train/activation_memory's state_bytes, plus
// the padding that keeps each tensor 512-byte aligned.
//
// Tensor order and names are the CPU reference's (train_reference.hpp):
// "embedding"; per layer "layers.<i>.attn_norm", wq, wk, wv, wo, mlp_norm,
// w_gate, w_up, w_down; "final_norm"; "logits".
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "harness/train/model_config.hpp"
#include "kernels/device_buffer.cuh"
#include "kernels/train/adamw.cuh"

namespace redline {

struct ParameterTensor {
  std::string name;
  std::vector<std::int64_t> shape;  // {h} for a norm weight, {out, in} for a matrix
  std::int64_t elements = 0;
  std::int64_t offset = 0;  // elements from the start of every state array
  bool is_norm() const { return shape.size() == 1; }
  std::int64_t in_features() const { return shape.back(); }
};

// The tensors of `config` in the reference's order, with padded offsets.
std::vector<ParameterTensor> parameter_tensors(const ModelConfig& config);

// The tensor numbers of one layer, in parameter_tensors' order.
struct LayerTensorIndex {
  std::size_t attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down;
};
LayerTensorIndex layer_tensor_index(std::int64_t layer);  // tensor 0 is the embedding

class TrainParameters {
 public:
  // Allocates the state and draws the initial weights from `seed` on
  // `stream` (weight_init.cuh); gradients and moments start at zero.
  TrainParameters(const ModelConfig& config, std::uint64_t seed, cudaStream_t stream);

  const std::vector<ParameterTensor>& tensors() const { return tensors_; }
  const __nv_bfloat16* weight(std::size_t index) const { return weights_.data() + tensors_.at(index).offset; }
  float* grad(std::size_t index) const { return grads_.data() + tensors_.at(index).offset; }

  void zero_grads(cudaStream_t stream);
  // One AdamW step on every tensor (weight decay on the matrices only).
  void adamw_step(const AdamWSettings& settings, cudaStream_t stream);
  std::int64_t steps() const { return steps_; }

  // Synchronous host copies for tests and for loading given weights: the
  // master weights (load refreshes the bf16 copy) and the gradients.
  std::vector<float> master_to_host(std::size_t index) const;
  std::vector<float> grad_to_host(std::size_t index) const;
  void load_master(std::size_t index, std::span<const float> values, cudaStream_t stream);

  std::int64_t bytes() const;

 private:
  std::vector<ParameterTensor> tensors_;
  std::int64_t padded_elements_ = 0;
  DeviceBuffer<__nv_bfloat16> weights_;
  DeviceBuffer<float> grads_, master_, m_, v_;
  std::int64_t steps_ = 0;
};

}  // namespace redline
