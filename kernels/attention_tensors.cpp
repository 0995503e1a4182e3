// AttentionBuffers: one allocation per tensor, random inputs through
// random_fill in the dtype's element type, NaN-filled outputs.
#include "kernels/attention_tensors.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <stdexcept>
#include <string>

#include "harness/core/splitmix64.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"
#include "kernels/random_fill.cuh"

namespace redline {

std::size_t attention_element_bytes(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::bf16:
    case GemmDtype::fp16: return 2;
    case GemmDtype::fp8_e4m3: return 1;
    default:
      throw std::invalid_argument(std::string("attention runs in bf16, fp16 or fp8_e4m3, not ") +
                                  gemm_dtype_info(dtype).name);
  }
}

namespace {

void fill_random(GemmDtype dtype, void* data, std::int64_t count, std::uint64_t seed, cudaStream_t stream) {
  const auto n = static_cast<std::size_t>(count);
  switch (dtype) {
    case GemmDtype::bf16: return random_fill(static_cast<__nv_bfloat16*>(data), n, seed, -1.0, 1.0, stream);
    case GemmDtype::fp16: return random_fill(static_cast<__half*>(data), n, seed, -1.0, 1.0, stream);
    case GemmDtype::fp8_e4m3: return random_fill(static_cast<__nv_fp8_e4m3*>(data), n, seed, -1.0, 1.0, stream);
    default: throw std::invalid_argument("AttentionBuffers: no random fill for this dtype");
  }
}

}  // namespace

struct AttentionBuffers::State {
  AttentionShape shape;
  GemmDtype dtype = GemmDtype::bf16;
  DeviceBuffer<std::byte> q, k, v, o, d_o, dq, dk, dv;
  DeviceBuffer<float> lse;
  AttentionTensors tensors;
  std::size_t bytes = 0;
};

AttentionBuffers::AttentionBuffers(const AttentionShape& shape, GemmDtype dtype, bool with_backward,
                                   std::uint64_t seed, cudaStream_t stream)
    : state_(std::make_unique<State>()) {
  validate(shape);
  State& s = *state_;
  s.shape = shape;
  s.dtype = dtype;
  const std::size_t element = attention_element_bytes(dtype);
  const auto q_bytes = static_cast<std::size_t>(query_elements(shape)) * element;
  const auto kv_bytes = static_cast<std::size_t>(kv_elements(shape)) * element;
  s.q = DeviceBuffer<std::byte>(q_bytes);
  s.k = DeviceBuffer<std::byte>(kv_bytes);
  s.v = DeviceBuffer<std::byte>(kv_bytes);
  s.o = DeviceBuffer<std::byte>(q_bytes);
  s.lse = DeviceBuffer<float>(static_cast<std::size_t>(shape.batch * shape.heads * shape.seq));
  if (with_backward) {
    s.d_o = DeviceBuffer<std::byte>(q_bytes);
    s.dq = DeviceBuffer<std::byte>(q_bytes);
    s.dk = DeviceBuffer<std::byte>(kv_bytes);
    s.dv = DeviceBuffer<std::byte>(kv_bytes);
  }
  // Hashed, not seed + i: seeds 1 and 2 must not share tensors.
  const auto seed_of = [seed](std::uint64_t tensor) { return splitmix64(seed) ^ splitmix64(tensor + 1); };
  fill_random(dtype, s.q.data(), query_elements(shape), seed_of(0), stream);
  fill_random(dtype, s.k.data(), kv_elements(shape), seed_of(1), stream);
  fill_random(dtype, s.v.data(), kv_elements(shape), seed_of(2), stream);
  if (with_backward) fill_random(dtype, s.d_o.data(), query_elements(shape), seed_of(3), stream);
  for (DeviceBuffer<std::byte>* output : {&s.o, &s.dq, &s.dk, &s.dv})
    if (!output->empty()) REDLINE_CUDA_CHECK(cudaMemsetAsync(output->data(), 0xFF, output->bytes(), stream));
  REDLINE_CUDA_CHECK(cudaMemsetAsync(s.lse.data(), 0xFF, s.lse.bytes(), stream));
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
  s.tensors = {s.q.data(), s.k.data(), s.v.data(), s.o.data(), s.lse.data(),
               s.d_o.data(), s.dq.data(), s.dk.data(), s.dv.data()};
  s.bytes = 2 * q_bytes + 2 * kv_bytes + s.lse.bytes() + (with_backward ? 2 * q_bytes + 2 * kv_bytes : 0);
}

AttentionBuffers::~AttentionBuffers() = default;
const AttentionTensors& AttentionBuffers::tensors() const { return state_->tensors; }
const AttentionShape& AttentionBuffers::shape() const { return state_->shape; }
GemmDtype AttentionBuffers::dtype() const { return state_->dtype; }
std::size_t AttentionBuffers::bytes() const { return state_->bytes; }

}  // namespace redline
