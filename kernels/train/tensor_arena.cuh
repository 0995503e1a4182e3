// One device allocation holding a list of named tensors (a list from
// harness/train/activation_memory), each at a 256-byte aligned offset, as
// cuBLASLt's plans assume. Looking up a name the list lacks throws, so code
// that needs a tensor the memory model does not count fails loudly instead
// of allocating it on the side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "harness/train/activation_memory.hpp"
#include "kernels/device_buffer.cuh"

namespace redline {

class TensorArena {
 public:
  TensorArena() = default;
  // Allocates every tensor of `tensors` (CudaError when it does not fit).
  explicit TensorArena(const std::vector<SavedTensor>& tensors);

  bool has(const std::string& name) const { return offsets_.count(name) != 0; }
  // Throws std::logic_error naming the tensor when the list lacks it.
  void* at(const std::string& name) const;
  template <typename T>
  T* get(const std::string& name) const {
    return static_cast<T*>(at(name));
  }
  std::int64_t bytes() const { return static_cast<std::int64_t>(memory_.bytes()); }

 private:
  DeviceBuffer<std::byte> memory_;
  std::unordered_map<std::string, std::size_t> offsets_;
};

}  // namespace redline
