// Deterministic initial weights, drawn on the device with the CPU
// reference's formula (harness/train/train_reference.hpp, init_weights), so
// a stack and the reference built from one seed start from the same values.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace redline {

// master[i] = 1 for a norm weight; otherwise (2u - 1) / sqrt(in_features)
// with u = (splitmix64(splitmix64(seed + tensor_index) + i) >> 11) * 2^-53,
// tensor_index the tensor's position in the stack's fixed order.
void init_master_weights(float* master, std::int64_t count, std::uint64_t seed, std::int64_t tensor_index,
                         std::int64_t in_features, bool is_norm, cudaStream_t stream);

}  // namespace redline
