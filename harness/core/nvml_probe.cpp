// GPU readings through NVML, loaded with dlopen: NVML ships with the driver,
// not the toolkit, so it is not linked (a machine without a driver still runs
// every host tool) and nvml.h is not needed. Only the few entry points used
// are declared here, with the ABI NVML documents.
#include <dlfcn.h>

#include <algorithm>

#include "harness/core/environment.hpp"

namespace redline {
namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr int NVML_CLOCK_SM = 1;
constexpr int NVML_TEMPERATURE_GPU = 0;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
// nvmlProcessInfo_t of the _v2 and _v3 process lists.
struct nvmlProcessInfo_t {
  unsigned pid;
  unsigned long long usedGpuMemory;  // ~0ull: not available
  unsigned gpuInstanceId, computeInstanceId;
};

std::string version_text(int cuda_version) {
  return std::to_string(cuda_version / 1000) + "." + std::to_string((cuda_version % 1000) / 10);
}

}  // namespace

// The loaded library and the entry points redline uses; null pointers for
// entry points this driver's NVML lacks.
struct NvmlSession::Library {
  void* handle = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*by_uuid)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*compute_capability)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*clock_events)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*cuda_driver_version)(int*) = nullptr;
  nvmlReturn_t (*compute_processes)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) = nullptr;

  template <typename F>
  void bind(F& entry, const char* symbol) {
    entry = reinterpret_cast<F>(dlsym(handle, symbol));
  }

  GpuReadings readings(nvmlDevice_t dev) const {
    GpuReadings r;
    unsigned value = 0;
    if (clock && clock(dev, NVML_CLOCK_SM, &value) == NVML_SUCCESS) r.sm_clock_mhz = value;
    if (max_clock && max_clock(dev, NVML_CLOCK_SM, &value) == NVML_SUCCESS) r.max_sm_clock_mhz = value;
    if (temperature && temperature(dev, NVML_TEMPERATURE_GPU, &value) == NVML_SUCCESS) r.temperature_c = value;
    if (power && power(dev, &value) == NVML_SUCCESS) r.power_w = value / 1000.0;
    unsigned long long reasons = 0;
    if (clock_events && clock_events(dev, &reasons) == NVML_SUCCESS) r.throttle_reasons = reasons;
    return r;
  }
};

NvmlSession::NvmlSession() {
  auto lib = std::make_unique<Library>();
  lib->handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle) {
    unavailable_ = "NVML (libnvidia-ml.so.1) not found: no NVIDIA driver on this machine";
    return;
  }
  nvmlReturn_t (*init)() = nullptr;
  lib->bind(init, "nvmlInit_v2");
  lib->bind(lib->shutdown, "nvmlShutdown");
  lib->bind(lib->count, "nvmlDeviceGetCount_v2");
  lib->bind(lib->by_index, "nvmlDeviceGetHandleByIndex_v2");
  if (!init || !lib->shutdown || !lib->count || !lib->by_index) {
    dlclose(lib->handle);
    unavailable_ = "NVML is too old: missing nvmlInit_v2 or device enumeration";
    return;
  }
  if (const nvmlReturn_t rc = init(); rc != NVML_SUCCESS) {
    dlclose(lib->handle);
    unavailable_ = "nvmlInit_v2 failed with NVML error " + std::to_string(rc);
    return;
  }
  lib->bind(lib->by_uuid, "nvmlDeviceGetHandleByUUID");
  lib->bind(lib->name, "nvmlDeviceGetName");
  lib->bind(lib->uuid, "nvmlDeviceGetUUID");
  lib->bind(lib->memory, "nvmlDeviceGetMemoryInfo");
  lib->bind(lib->compute_capability, "nvmlDeviceGetCudaComputeCapability");
  lib->bind(lib->clock, "nvmlDeviceGetClockInfo");
  lib->bind(lib->max_clock, "nvmlDeviceGetMaxClockInfo");
  lib->bind(lib->temperature, "nvmlDeviceGetTemperature");
  lib->bind(lib->power, "nvmlDeviceGetPowerUsage");
  // Renamed "clocks event reasons" in newer drivers; the bitmask is the same.
  lib->bind(lib->clock_events, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!lib->clock_events) lib->bind(lib->clock_events, "nvmlDeviceGetCurrentClocksThrottleReasons");
  lib->bind(lib->driver_version, "nvmlSystemGetDriverVersion");
  lib->bind(lib->cuda_driver_version, "nvmlSystemGetCudaDriverVersion");
  lib->bind(lib->compute_processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!lib->compute_processes) lib->bind(lib->compute_processes, "nvmlDeviceGetComputeRunningProcesses_v2");
  lib_ = std::move(lib);
}

NvmlSession::~NvmlSession() {
  if (!lib_) return;
  lib_->shutdown();
  dlclose(lib_->handle);
}

const std::optional<std::string>& NvmlSession::unavailable() const { return unavailable_; }

std::optional<GpuReadings> NvmlSession::read(const std::string& uuid) const {
  if (!lib_ || !lib_->by_uuid) return std::nullopt;
  nvmlDevice_t dev = nullptr;
  if (lib_->by_uuid(uuid.c_str(), &dev) != NVML_SUCCESS) return std::nullopt;
  return lib_->readings(dev);
}

std::optional<std::uint64_t> NvmlSession::process_memory(const std::vector<int>& pids) const {
  if (!lib_ || !lib_->compute_processes) return std::nullopt;
  unsigned count = 0;
  lib_->count(&count);
  std::optional<std::uint64_t> used;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    if (lib_->by_index(i, &dev) != NVML_SUCCESS) continue;
    std::vector<nvmlProcessInfo_t> infos(64);
    unsigned n = static_cast<unsigned>(infos.size());
    nvmlReturn_t rc = lib_->compute_processes(dev, &n, infos.data());
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {  // n now says how many there are
      infos.resize(n + 16);
      n = static_cast<unsigned>(infos.size());
      rc = lib_->compute_processes(dev, &n, infos.data());
    }
    if (rc != NVML_SUCCESS) continue;
    for (unsigned k = 0; k < n && k < infos.size(); ++k) {
      const auto& info = infos[k];
      const bool ours = std::find(pids.begin(), pids.end(), static_cast<int>(info.pid)) != pids.end();
      if (ours && info.usedGpuMemory != ~0ull) used = used.value_or(0) + info.usedGpuMemory;
    }
  }
  return used;
}

std::string slowdown_reason_names(std::uint64_t reasons) {
  static const std::pair<std::uint64_t, const char*> kNames[] = {
      {0x4, "sw_power_cap"}, {0x8, "hw_slowdown"}, {0x20, "sw_thermal"}, {0x40, "hw_thermal"}, {0x80, "power_brake"}};
  std::string names;
  for (const auto& [bit, name] : kNames)
    if (reasons & bit) names += std::string(names.empty() ? "" : "+") + name;
  return names;
}

std::optional<std::string> add_nvml_gpu_info(Environment& env) {
  const NvmlSession session;
  if (session.unavailable()) return session.unavailable();
  const NvmlSession::Library& nvml = *session.lib_;

  char text[256];
  if (nvml.driver_version && nvml.driver_version(text, sizeof text) == NVML_SUCCESS) env.driver_version = text;
  int cuda_version = 0;
  if (nvml.cuda_driver_version && nvml.cuda_driver_version(&cuda_version) == NVML_SUCCESS)
    env.cuda_driver_version = version_text(cuda_version);

  unsigned count = 0;
  nvml.count(&count);
  env.gpus.clear();
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    if (nvml.by_index(i, &dev) != NVML_SUCCESS) continue;
    GpuInfo gpu;
    gpu.index = static_cast<int>(i);
    if (nvml.name && nvml.name(dev, text, sizeof text) == NVML_SUCCESS) gpu.name = text;
    if (nvml.uuid && nvml.uuid(dev, text, sizeof text) == NVML_SUCCESS) gpu.uuid = text;
    nvmlMemory_t mem {};
    if (nvml.memory && nvml.memory(dev, &mem) == NVML_SUCCESS) gpu.memory_bytes = mem.total;
    int major = 0, minor = 0;
    if (nvml.compute_capability && nvml.compute_capability(dev, &major, &minor) == NVML_SUCCESS)
      gpu.compute_capability = std::to_string(major) + "." + std::to_string(minor);
    static_cast<GpuReadings&>(gpu) = nvml.readings(dev);
    env.gpus.push_back(gpu);
  }
  // NVML lists every GPU on the host; CUDA_VISIBLE_DEVICES does not apply.
  env.gpu_source = "nvml";
  return std::nullopt;
}

}  // namespace redline
