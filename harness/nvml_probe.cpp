// GPU readings through NVML, loaded with dlopen: NVML ships with the driver,
// not the toolkit, so it is not linked (a machine without a driver still runs
// every host tool) and nvml.h is not needed. Only the few entry points used
// are declared here, with the ABI NVML documents.
#include <dlfcn.h>

#include "harness/environment.hpp"

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

struct Nvml {
  void* lib = nullptr;
  template <typename F>
  F get(const char* name) const { return reinterpret_cast<F>(dlsym(lib, name)); }
};

std::string version_text(int cuda_version) {
  return std::to_string(cuda_version / 1000) + "." + std::to_string((cuda_version % 1000) / 10);
}

}  // namespace

std::optional<std::string> add_nvml_gpu_info(Environment& env) {
  Nvml nvml;
  nvml.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!nvml.lib) return std::string("NVML (libnvidia-ml.so.1) not found: no NVIDIA driver on this machine");

  auto init = nvml.get<nvmlReturn_t (*)()>("nvmlInit_v2");
  auto shutdown = nvml.get<nvmlReturn_t (*)()>("nvmlShutdown");
  auto count_fn = nvml.get<nvmlReturn_t (*)(unsigned*)>("nvmlDeviceGetCount_v2");
  auto handle_fn = nvml.get<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>("nvmlDeviceGetHandleByIndex_v2");
  if (!init || !shutdown || !count_fn || !handle_fn) {
    dlclose(nvml.lib);
    return std::string("NVML is too old: missing nvmlInit_v2 or device enumeration");
  }
  if (const nvmlReturn_t rc = init(); rc != NVML_SUCCESS) {
    dlclose(nvml.lib);
    return "nvmlInit_v2 failed with NVML error " + std::to_string(rc);
  }

  auto name_fn = nvml.get<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>("nvmlDeviceGetName");
  auto uuid_fn = nvml.get<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>("nvmlDeviceGetUUID");
  auto memory_fn = nvml.get<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>("nvmlDeviceGetMemoryInfo");
  auto cc_fn = nvml.get<nvmlReturn_t (*)(nvmlDevice_t, int*, int*)>("nvmlDeviceGetCudaComputeCapability");
  auto clock_fn = nvml.get<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetClockInfo");
  auto max_clock_fn = nvml.get<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetMaxClockInfo");
  auto temp_fn = nvml.get<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetTemperature");
  auto power_fn = nvml.get<nvmlReturn_t (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetPowerUsage");
  // Renamed "clocks event reasons" in newer drivers; the bitmask is the same.
  auto throttle_fn = nvml.get<nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*)>(
      "nvmlDeviceGetCurrentClocksEventReasons");
  if (!throttle_fn)
    throttle_fn = nvml.get<nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*)>(
        "nvmlDeviceGetCurrentClocksThrottleReasons");
  auto driver_fn = nvml.get<nvmlReturn_t (*)(char*, unsigned)>("nvmlSystemGetDriverVersion");
  auto cuda_fn = nvml.get<nvmlReturn_t (*)(int*)>("nvmlSystemGetCudaDriverVersion");

  char text[256];
  if (driver_fn && driver_fn(text, sizeof text) == NVML_SUCCESS) env.driver_version = text;
  int cuda_version = 0;
  if (cuda_fn && cuda_fn(&cuda_version) == NVML_SUCCESS) env.cuda_driver_version = version_text(cuda_version);

  unsigned count = 0;
  count_fn(&count);
  env.gpus.clear();
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    if (handle_fn(i, &dev) != NVML_SUCCESS) continue;
    GpuInfo gpu;
    gpu.index = static_cast<int>(i);
    if (name_fn && name_fn(dev, text, sizeof text) == NVML_SUCCESS) gpu.name = text;
    if (uuid_fn && uuid_fn(dev, text, sizeof text) == NVML_SUCCESS) gpu.uuid = text;
    nvmlMemory_t mem {};
    if (memory_fn && memory_fn(dev, &mem) == NVML_SUCCESS) gpu.memory_bytes = mem.total;
    int major = 0, minor = 0;
    if (cc_fn && cc_fn(dev, &major, &minor) == NVML_SUCCESS)
      gpu.compute_capability = std::to_string(major) + "." + std::to_string(minor);
    unsigned value = 0;
    if (clock_fn && clock_fn(dev, NVML_CLOCK_SM, &value) == NVML_SUCCESS) gpu.sm_clock_mhz = value;
    if (max_clock_fn && max_clock_fn(dev, NVML_CLOCK_SM, &value) == NVML_SUCCESS) gpu.max_sm_clock_mhz = value;
    if (temp_fn && temp_fn(dev, NVML_TEMPERATURE_GPU, &value) == NVML_SUCCESS) gpu.temperature_c = value;
    if (power_fn && power_fn(dev, &value) == NVML_SUCCESS) gpu.power_w = value / 1000.0;
    unsigned long long reasons = 0;
    if (throttle_fn && throttle_fn(dev, &reasons) == NVML_SUCCESS) gpu.throttle_reasons = reasons;
    env.gpus.push_back(gpu);
  }
  // NVML lists every GPU on the host; CUDA_VISIBLE_DEVICES does not apply.
  env.gpu_source = "nvml";
  shutdown();
  dlclose(nvml.lib);
  return std::nullopt;
}

}  // namespace redline
