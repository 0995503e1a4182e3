// TensorArena: offsets rounded up to 256 bytes, one cudaMalloc.
#include "kernels/train/tensor_arena.cuh"

#include <stdexcept>

namespace redline {

namespace {
constexpr std::size_t kAlignment = 256;
std::size_t round_up(std::size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }
}  // namespace

TensorArena::TensorArena(const std::vector<SavedTensor>& tensors) {
  std::size_t total = 0;
  for (const SavedTensor& t : tensors) {
    if (!offsets_.emplace(t.name, total).second) throw std::logic_error("TensorArena: tensor " + t.name + " listed twice");
    total += round_up(static_cast<std::size_t>(t.bytes()));
  }
  memory_ = DeviceBuffer<std::byte>(total);
}

void* TensorArena::at(const std::string& name) const {
  const auto found = offsets_.find(name);
  if (found == offsets_.end())
    throw std::logic_error("TensorArena: no tensor " + name + " in the memory model's list");
  return memory_.data() + found->second;
}

}  // namespace redline
