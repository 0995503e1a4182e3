// The initial-weight kernel: one thread per element, formed in double like
// the reference and rounded once to fp32.
#include "kernels/train/weight_init.cuh"

#include <cmath>

#include "harness/core/splitmix64.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/train/block_reduce.cuh"

namespace redline {
namespace {

__global__ void init_elements(float* master, std::int64_t count, std::uint64_t tensor_key, double scale, bool is_norm) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  if (is_norm) {
    master[i] = 1.0f;
    return;
  }
  const double u = static_cast<double>(splitmix64(tensor_key + static_cast<std::uint64_t>(i)) >> 11) * 0x1.0p-53;
  master[i] = static_cast<float>((2.0 * u - 1.0) * scale);
}

}  // namespace

void init_master_weights(float* master, std::int64_t count, std::uint64_t seed, std::int64_t tensor_index,
                         std::int64_t in_features, bool is_norm, cudaStream_t stream) {
  const std::uint64_t key = splitmix64(seed + static_cast<std::uint64_t>(tensor_index));
  const double scale = 1.0 / std::sqrt(static_cast<double>(in_features));
  init_elements<<<train_detail::grid_for(count), train_detail::kRowThreads, 0, stream>>>(master, count, key, scale,
                                                                                         is_norm);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace redline
