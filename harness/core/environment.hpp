// Captures the state that explains a number: who, where, when, on what.
// Pure C++: GPU details come from NVML loaded at run time (no CUDA context is
// created) and, in tools that link kernels/, from the CUDA runtime.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redline {

// One GPU's state now, from NVML: what explains a throughput figure that
// moved (a lower clock, a power cap, heat). nullopt fields: unknown.
struct GpuReadings {
  std::optional<unsigned> sm_clock_mhz;
  std::optional<unsigned> max_sm_clock_mhz;
  std::optional<unsigned> temperature_c;
  std::optional<double> power_w;
  std::optional<std::uint64_t> throttle_reasons;  // NVML clocks-event bitmask
};

// A GPU's identity, and its readings when the environment was captured
// (std::nullopt means unknown, never a guess).
struct GpuInfo : GpuReadings {
  int index = -1;
  std::string name;
  std::string uuid;
  std::string compute_capability;    // "9.0"; empty when unknown
  int sm_count = 0;                  // 0 when unknown (NVML does not report it)
  std::uint64_t memory_bytes = 0;
  std::uint64_t l2_bytes = 0;
};

struct Environment {
  std::string redline_version;
  std::string git_sha;
  std::string timestamp_utc;  // ISO 8601, when the run started
  std::string host;
  std::string cpu_model;
  int cpu_count = 0;
  std::string os;
  std::string driver_version;        // NVIDIA driver; empty when unknown
  std::string cuda_driver_version;   // highest CUDA the driver supports
  std::string cuda_runtime_version;  // the runtime this binary links
  std::string cublas_version;
  std::string nccl_version;
  std::string mpi_library;           // "Open MPI v4.1.4" when the run uses MPI; empty otherwise
  std::string gpu_source;            // "nvml", "cuda", or why there are no GPUs
  std::vector<GpuInfo> gpus;
  std::map<std::string, std::string> variables;  // NCCL_*, OMPI_MCA_btl*, CUDA_VISIBLE_DEVICES, ...

  // "NVIDIA H200" or "2x NVIDIA H100 80GB HBM3" or "none".
  std::string gpu_summary() const;
};

// Host, OS, CPU, versions and the relevant environment variables, plus what
// NVML can tell about the GPUs without creating a CUDA context.
Environment capture_environment();

// Environment variables that change collective or device behaviour.
std::map<std::string, std::string> relevant_variables();

// Whether a variable steers how NCCL or MPI moves data (NCCL_*, Open MPI's
// transport and collective MCA settings, UCX_*, FI_*): the ones a collective
// benchmark's header names.
bool steers_communication(const std::string& name);

// Fills GPU fields from NVML (libnvidia-ml.so.1, loaded at run time).
// Returns the reason when NVML is unusable; `env` is then left unchanged.
std::optional<std::string> add_nvml_gpu_info(Environment& env);


// NVML held open for repeated readings (before and after every measured
// shape): nvmlInit can take tens of milliseconds, too slow to repeat.
class NvmlSession {
 public:
  NvmlSession();  // never throws; unavailable() says why it cannot read
  ~NvmlSession();
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;

  const std::optional<std::string>& unavailable() const;
  // The GPU with this UUID ("GPU-...", as DeviceProperties::uuid and NVML
  // give it); nullopt when NVML is unavailable or does not know it.
  std::optional<GpuReadings> read(const std::string& uuid) const;
  // The GPU memory that the processes `pids` use now, summed over every GPU
  // (NVML's compute process list); nullopt when NVML cannot tell or lists
  // none of them.
  std::optional<std::uint64_t> process_memory(const std::vector<int>& pids) const;

  struct Library;

 private:
  friend std::optional<std::string> add_nvml_gpu_info(Environment& env);
  std::unique_ptr<Library> lib_;
  std::optional<std::string> unavailable_;
};

// Clock-event bits that mean the GPU ran slower than it could for a reason
// other than idling or an application setting: software power cap, hardware
// slowdown, thermal slowdown, power brake.
inline constexpr std::uint64_t kSlowdownReasonMask = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
// "sw_power_cap+sw_thermal" for the slowdown bits set; empty when none.
std::string slowdown_reason_names(std::uint64_t reasons);

// UTC now as 2026-11-22T12:34:56Z.
std::string utc_timestamp();
// A run id that sorts by time: 20261122T123456Z-host-1234.
std::string make_run_id(const std::string& host);

}  // namespace redline
