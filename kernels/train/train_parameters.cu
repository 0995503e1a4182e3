// TrainParameters: the flat state arrays, their initialisation, AdamW per
// tensor (decay differs between norms and matrices) and host copies.
#include "kernels/train/train_parameters.cuh"

#include <stdexcept>

#include "kernels/cuda_check.cuh"
#include "kernels/train/weight_init.cuh"

namespace redline {

namespace {

// 128 elements: 256 bytes of bf16, 512 of fp32, what cuBLASLt's plans assume.
constexpr std::int64_t kAlignElements = 128;

std::int64_t round_up(std::int64_t n) { return (n + kAlignElements - 1) / kAlignElements * kAlignElements; }

std::vector<std::pair<std::string, std::vector<std::int64_t>>> shapes(const ModelConfig& c) {
  const std::int64_t h = c.hidden, k = c.kv_dim(), f = c.ffn;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> out = {{"embedding", {c.vocab, h}}};
  for (std::int64_t i = 0; i < c.layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    out.push_back({p + "attn_norm", {h}});
    out.push_back({p + "wq", {h, h}});
    out.push_back({p + "wk", {k, h}});
    out.push_back({p + "wv", {k, h}});
    out.push_back({p + "wo", {h, h}});
    out.push_back({p + "mlp_norm", {h}});
    out.push_back({p + "w_gate", {f, h}});
    out.push_back({p + "w_up", {f, h}});
    out.push_back({p + "w_down", {h, f}});
  }
  out.push_back({"final_norm", {h}});
  out.push_back({"logits", {c.vocab, h}});
  return out;
}

}  // namespace

std::vector<ParameterTensor> parameter_tensors(const ModelConfig& config) {
  validate(config);
  std::vector<ParameterTensor> out;
  std::int64_t offset = 0;
  for (auto& [name, shape] : shapes(config)) {
    ParameterTensor t;
    t.name = name;
    t.shape = shape;
    t.elements = shape.size() == 1 ? shape[0] : shape[0] * shape[1];
    t.offset = offset;
    offset += round_up(t.elements);
    out.push_back(std::move(t));
  }
  return out;
}

LayerTensorIndex layer_tensor_index(std::int64_t layer) {
  const std::size_t b = 1 + 9 * static_cast<std::size_t>(layer);
  return {b, b + 1, b + 2, b + 3, b + 4, b + 5, b + 6, b + 7, b + 8};
}

TrainParameters::TrainParameters(const ModelConfig& config, std::uint64_t seed, cudaStream_t stream)
    : tensors_(parameter_tensors(config)) {
  padded_elements_ = tensors_.back().offset + round_up(tensors_.back().elements);
  const auto n = static_cast<std::size_t>(padded_elements_);
  weights_ = DeviceBuffer<__nv_bfloat16>(n);
  grads_ = DeviceBuffer<float>(n);
  master_ = DeviceBuffer<float>(n);
  m_ = DeviceBuffer<float>(n);
  v_ = DeviceBuffer<float>(n);
  // Padding too, so no array holds uninitialised bits.
  for (float* zeroed : {grads_.data(), master_.data(), m_.data(), v_.data()})
    REDLINE_CUDA_CHECK(cudaMemsetAsync(zeroed, 0, n * sizeof(float), stream));
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const ParameterTensor& t = tensors_[i];
    init_master_weights(master_.data() + t.offset, t.elements, seed, static_cast<std::int64_t>(i), t.in_features(),
                        t.is_norm(), stream);
  }
  cast_to_bf16(master_.data(), weights_.data(), padded_elements_, stream);
}

void TrainParameters::zero_grads(cudaStream_t stream) {
  REDLINE_CUDA_CHECK(cudaMemsetAsync(grads_.data(), 0, grads_.bytes(), stream));
}

void TrainParameters::adamw_step(const AdamWSettings& settings, cudaStream_t stream) {
  ++steps_;
  for (const ParameterTensor& t : tensors_)
    adamw_update(master_.data() + t.offset, grads_.data() + t.offset, m_.data() + t.offset, v_.data() + t.offset,
                 weights_.data() + t.offset, t.elements, settings, steps_, !t.is_norm(), stream);
}

std::vector<float> TrainParameters::master_to_host(std::size_t index) const {
  const ParameterTensor& t = tensors_.at(index);
  std::vector<float> out(static_cast<std::size_t>(t.elements));
  REDLINE_CUDA_CHECK(cudaMemcpy(out.data(), master_.data() + t.offset, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return out;
}

std::vector<float> TrainParameters::grad_to_host(std::size_t index) const {
  const ParameterTensor& t = tensors_.at(index);
  std::vector<float> out(static_cast<std::size_t>(t.elements));
  REDLINE_CUDA_CHECK(cudaMemcpy(out.data(), grads_.data() + t.offset, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return out;
}

void TrainParameters::load_master(std::size_t index, std::span<const float> values, cudaStream_t stream) {
  const ParameterTensor& t = tensors_.at(index);
  if (static_cast<std::int64_t>(values.size()) != t.elements)
    throw std::invalid_argument("TrainParameters::load_master: " + t.name + " has " + std::to_string(t.elements) +
                                " elements, not " + std::to_string(values.size()));
  // On the stream: after the work that still reads the old values, before
  // the cast (a plain cudaMemcpy would order with neither).
  REDLINE_CUDA_CHECK(cudaMemcpyAsync(master_.data() + t.offset, values.data(), values.size_bytes(),
                                     cudaMemcpyHostToDevice, stream));
  cast_to_bf16(master_.data() + t.offset, weights_.data() + t.offset, t.elements, stream);
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

std::int64_t TrainParameters::bytes() const {
  return static_cast<std::int64_t>(weights_.bytes() + grads_.bytes() + master_.bytes() + m_.bytes() + v_.bytes());
}

}  // namespace redline
