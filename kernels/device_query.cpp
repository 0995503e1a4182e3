// DeviceProperties from cudaGetDeviceProperties plus device attributes, and
// their merge into the run's Environment.
#include "kernels/device_query.cuh"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <exception>

#include "kernels/cuda_check.cuh"

#if defined(REDLINE_HAVE_CUBLASLT)
#include <cublasLt.h>
#endif
#if defined(REDLINE_HAVE_NCCL)
#include <nccl.h>
#endif

namespace redline {

namespace {

// An attribute the driver may not report (clocks on some virtualized or
// future devices): unknown rather than an error.
std::optional<int> optional_attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attribute, device) != cudaSuccess) {
    (void)cudaGetLastError();  // a failed query must not surface at the next checked call
    return std::nullopt;
  }
  if (value <= 0) return std::nullopt;
  return value;
}

int required_attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  REDLINE_CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

std::optional<unsigned> khz_to_mhz(std::optional<int> khz) {
  if (!khz) return std::nullopt;
  return static_cast<unsigned>((*khz + 500) / 1000);
}

std::string format_uuid(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char text[64];
  std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return text;
}

// CUDA encodes versions as 1000 * major + 10 * minor: 13000 is "13.0".
std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string error_text(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

void add_library_versions(Environment& env) {
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) env.cuda_runtime_version = cuda_version_text(runtime);
  // NVML reports this too when present; the runtime can still tell when NVML is missing.
  int driver = 0;
  if (env.cuda_driver_version.empty() && cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) {
    env.cuda_driver_version = cuda_version_text(driver);
  }
#if defined(REDLINE_HAVE_CUBLASLT)
  // 10000 * major + 100 * minor + patch.
  const std::size_t cublas = cublasLtGetVersion();
  env.cublas_version = std::to_string(cublas / 10000) + "." + std::to_string((cublas / 100) % 100) + "." +
                       std::to_string(cublas % 100);
#endif
#if defined(REDLINE_HAVE_NCCL)
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    // NCCL switched from 1000 * major + 100 * minor + patch to
    // 10000 * major + 100 * minor + patch at 2.9.
    const int major_unit = nccl >= 10000 ? 10000 : 1000;
    env.nccl_version = std::to_string(nccl / major_unit) + "." + std::to_string((nccl % major_unit) / 100) + "." +
                       std::to_string(nccl % 100);
  }
#endif
}

GpuInfo* find_nvml_entry(Environment& env, const DeviceProperties& device) {
  auto same_gpu = [&](const GpuInfo& gpu) {
    // Without a UUID on NVML's side, fall back to the index: right unless
    // CUDA_VISIBLE_DEVICES or CUDA_DEVICE_ORDER reorders devices.
    return gpu.uuid.empty() ? gpu.index == device.device : gpu.uuid == device.uuid;
  };
  const auto found = std::find_if(env.gpus.begin(), env.gpus.end(), same_gpu);
  return found == env.gpus.end() ? nullptr : &*found;
}

}  // namespace

std::string DeviceProperties::compute_capability() const {
  return std::to_string(compute_capability_major) + "." + std::to_string(compute_capability_minor);
}

DeviceProperties query_device_properties(int device) {
  cudaDeviceProp prop{};
  REDLINE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));

  DeviceProperties result;
  result.device = device;
  result.name = prop.name;
  result.uuid = format_uuid(prop.uuid);
  result.compute_capability_major = prop.major;
  result.compute_capability_minor = prop.minor;
  result.sm_count = prop.multiProcessorCount;
  result.l2_bytes = static_cast<std::uint64_t>(std::max(prop.l2CacheSize, 0));
  result.memory_bytes = prop.totalGlobalMem;
  result.max_sm_clock_mhz = khz_to_mhz(optional_attribute(cudaDevAttrClockRate, device));
  result.memory_clock_mhz = khz_to_mhz(optional_attribute(cudaDevAttrMemoryClockRate, device));
  result.memory_bus_width_bits = optional_attribute(cudaDevAttrGlobalMemoryBusWidth, device);
  result.max_shared_memory_per_sm_bytes =
      static_cast<std::uint64_t>(required_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  result.max_shared_memory_per_block_optin_bytes =
      static_cast<std::uint64_t>(required_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return result;
}

void add_cuda_gpu_info(Environment& env) {
  add_library_versions(env);

  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    if (env.gpus.empty()) {
      env.gpu_source = status != cudaSuccess ? "no GPU: cudaGetDeviceCount returned " + error_text(status)
                                             : "no GPU: cudaGetDeviceCount found 0 devices";
    }
    return;
  }

  const bool listed_by_nvml = !env.gpus.empty();
  bool merged_any = false;
  for (int device = 0; device < count; ++device) {
    DeviceProperties props;
    try {
      props = query_device_properties(device);
    } catch (const std::exception&) {
      continue;  // one unqueryable device must not hide the others
    }
    if (GpuInfo* nvml = find_nvml_entry(env, props)) {
      nvml->sm_count = props.sm_count;
      nvml->l2_bytes = props.l2_bytes;
      if (nvml->compute_capability.empty()) nvml->compute_capability = props.compute_capability();
      if (nvml->name.empty()) nvml->name = props.name;
      if (nvml->uuid.empty()) nvml->uuid = props.uuid;
      if (nvml->memory_bytes == 0) nvml->memory_bytes = props.memory_bytes;
      if (!nvml->max_sm_clock_mhz) nvml->max_sm_clock_mhz = props.max_sm_clock_mhz;
      merged_any = true;
      continue;
    }
    GpuInfo gpu;
    gpu.index = device;
    gpu.name = props.name;
    gpu.uuid = props.uuid;
    gpu.compute_capability = props.compute_capability();
    gpu.sm_count = props.sm_count;
    gpu.memory_bytes = props.memory_bytes;
    gpu.l2_bytes = props.l2_bytes;
    gpu.max_sm_clock_mhz = props.max_sm_clock_mhz;
    env.gpus.push_back(gpu);
  }

  if (env.gpus.empty()) {
    env.gpu_source = "no GPU: cudaGetDeviceProperties failed for all " + std::to_string(count) + " devices";
  } else if (!listed_by_nvml) {
    env.gpu_source = "cuda";
  } else if (merged_any && env.gpu_source.find("cuda") == std::string::npos) {
    env.gpu_source = env.gpu_source.empty() ? "cuda" : env.gpu_source + "+cuda";
  }
}

}  // namespace redline
