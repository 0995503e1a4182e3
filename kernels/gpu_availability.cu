// no_usable_gpu_reason: asks the runtime for devices, then proves the device
// can run a kernel from this binary.
#include "kernels/gpu_availability.cuh"

#include <cuda_runtime_api.h>

#include <string_view>

// Set by kernels/CMakeLists.txt from CMAKE_CUDA_ARCHITECTURES, comma-separated.
#ifndef REDLINE_CUDA_ARCHITECTURES
#define REDLINE_CUDA_ARCHITECTURES "unknown"
#endif

namespace redline {

namespace {

// Does nothing: its launch succeeding is the test.
__global__ void probe_kernel() {}

std::string error_text(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string reason_for_device_count_failure(cudaError_t status) {
  const std::string call = "cudaGetDeviceCount returned " + error_text(status);
  if (status == cudaErrorNoDevice) return "no CUDA-capable device: " + call;
  if (status == cudaErrorInsufficientDriver) {
    // The runtime reports driver version 0 when libcuda.so.1 cannot be loaded.
    int driver = 0;
    (void)cudaDriverGetVersion(&driver);
    if (driver == 0) return "CUDA driver missing (libcuda.so.1 not loaded): " + call;
    int runtime = 0;
    (void)cudaRuntimeGetVersion(&runtime);
    return "CUDA driver too old: it supports CUDA " + cuda_version_text(driver) + ", this binary needs CUDA " +
           cuda_version_text(runtime) + ": " + call;
  }
  return "CUDA unusable: " + call;
}

// "device 0 (NVIDIA GeForce RTX 5090) is sm_120"
std::string device_description(int device) {
  const std::string label = "device " + std::to_string(device);
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return label + " has another architecture";
  }
  return label + " (" + prop.name + ") is sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
}

struct ProbeResult {
  cudaError_t status = cudaSuccess;
  // What returned `status`, for the message: a failed cudaSetDevice is not
  // a failed launch (it points at the device or driver, not at the binary).
  const char* step = "a trivial kernel launch";
};

// Launches the probe on `device`, which stays the current device. Restoring
// a previous device would create a context on it (cudaSetDevice does since
// CUDA 12): with GPU 0 as the default, every rank of a node would hold one.
ProbeResult launch_probe_kernel(int device) {
  ProbeResult result;
  result.status = cudaSetDevice(device);
  if (result.status != cudaSuccess) {
    result.step = "cudaSetDevice";
  } else {
    probe_kernel<<<1, 1>>>();
    result.status = cudaGetLastError();
    if (result.status == cudaSuccess) result.status = cudaDeviceSynchronize();
  }
  (void)cudaGetLastError();
  return result;
}

}  // namespace

std::string compiled_cuda_architectures() {
  std::string text;
  std::string_view remaining = REDLINE_CUDA_ARCHITECTURES;
  while (!remaining.empty()) {
    const std::size_t comma = remaining.find(',');
    std::string_view arch = remaining.substr(0, comma);
    remaining = comma == std::string_view::npos ? std::string_view{} : remaining.substr(comma + 1);
    // "90-real" / "90-virtual" are CMake's SASS-only / PTX-only spellings.
    arch = arch.substr(0, arch.find('-'));
    if (arch.empty()) continue;
    if (!text.empty()) text += ", ";
    if (arch.front() >= '0' && arch.front() <= '9') text += "sm_";
    text += arch;
  }
  return text;
}

std::optional<std::string> no_usable_gpu_reason(int device) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return reason_for_device_count_failure(status);
  }
  if (count == 0) return "no CUDA-capable device: cudaGetDeviceCount found 0 devices";
  if (device < 0 || device >= count) {
    return "device " + std::to_string(device) + " does not exist: cudaGetDeviceCount found " + std::to_string(count) +
           " (check CUDA_VISIBLE_DEVICES)";
  }

  const ProbeResult probe = launch_probe_kernel(device);
  if (probe.status == cudaErrorNoKernelImageForDevice) {
    return "this binary was built for " + compiled_cuda_architectures() + " but " + device_description(device) +
           "; rebuild with -DCMAKE_CUDA_ARCHITECTURES=native";
  }
  if (probe.status != cudaSuccess) {
    return "device " + std::to_string(device) + " unusable: " + probe.step + " returned " + error_text(probe.status);
  }
  return std::nullopt;
}

int visible_gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace redline
