// What the CUDA runtime says about a device: the facts that explain a number
// (SM count, L2 size, clocks) and that sizing decisions need (shared memory).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "harness/core/environment.hpp"

namespace redline {

struct DeviceProperties {
  int device = -1;
  std::string name;
  std::string uuid;  // "GPU-8-4-4-4-12 hex digits", the format NVML reports, for matching
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int sm_count = 0;
  std::uint64_t l2_bytes = 0;
  std::uint64_t memory_bytes = 0;
  // Peak (boost) clocks from device attributes; CUDA 13 dropped them from
  // cudaDeviceProp. std::nullopt when the driver does not report them.
  std::optional<unsigned> max_sm_clock_mhz;
  std::optional<unsigned> memory_clock_mhz;
  std::optional<int> memory_bus_width_bits;
  std::uint64_t max_shared_memory_per_sm_bytes = 0;
  std::uint64_t max_shared_memory_per_block_optin_bytes = 0;

  std::string compute_capability() const;  // "9.0"
};

// Throws CudaError when the device cannot be queried.
DeviceProperties query_device_properties(int device);

// Adds the CUDA view to an Environment: runtime, cuBLASLt and NCCL versions
// (those linked), and per GPU the SM count, L2 size and compute capability.
// GPUs that NVML already listed (matched by UUID, so CUDA_VISIBLE_DEVICES
// reordering cannot mismatch them) keep NVML's readings; the rest are added.
// Never throws: environment capture must not stop a run. When CUDA sees no
// GPU and NVML listed none, env.gpu_source says why.
void add_cuda_gpu_info(Environment& env);

}  // namespace redline
