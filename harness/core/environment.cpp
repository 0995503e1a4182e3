#include "harness/core/environment.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

#include "redline_version.hpp"

extern char** environ;

namespace redline {
namespace {

std::string first_line_value(const char* path, const std::string& prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    auto value = line.substr(prefix.size());
    const auto start = value.find_first_not_of(" \t:=\"");
    if (start == std::string::npos) return "";
    value = value.substr(start);
    while (!value.empty() && (value.back() == '"' || value.back() == ' ')) value.pop_back();
    return value;
  }
  return "";
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string os_description() {
  std::string os = first_line_value("/etc/os-release", "PRETTY_NAME");
  struct utsname u {};
  if (uname(&u) == 0) os += (os.empty() ? "" : ", ") + std::string(u.sysname) + " " + u.release + " " + u.machine;
  return os.empty() ? "unknown" : os;
}

}  // namespace

std::string Environment::gpu_summary() const {
  if (gpus.empty()) return "none";
  bool same = true;
  for (const auto& g : gpus) same = same && g.name == gpus.front().name;
  if (same) return gpus.size() == 1 ? gpus.front().name : std::to_string(gpus.size()) + "x " + gpus.front().name;
  std::string mixed;
  for (const auto& g : gpus) mixed += (mixed.empty() ? "" : " + ") + g.name;
  return mixed;
}

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm {};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string make_run_id(const std::string& host) {
  std::string stamp = utc_timestamp();  // 2026-11-22T12:34:56Z -> 20261122T123456Z
  std::string compact;
  for (char c : stamp)
    if (c != '-' && c != ':') compact += c;
  std::string safe_host;
  for (char c : host) safe_host += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_') ? c : '-';
  return compact + "-" + safe_host + "-" + std::to_string(getpid());
}

bool steers_communication(const std::string& name) {
  // Open MPI's transport, single-copy and collective choices and its mpi_
  // parameters (mpirun --mca reaches the ranks as OMPI_MCA_*; no underscore
  // after the framework, so a bare OMPI_MCA_btl counts too). Single-copy alone
  // moved host all-reduce figures a lot on this project's VM (README,
  // "Against the peers"). The launcher's own wiring (orte_, pmix, ess_, ...)
  // stays out. UCX_ and FI_ steer the fabric under MPI and under NCCL's
  // network plugins alike.
  static const char* const kPrefixes[] = {"NCCL_",         "OMPI_MCA_btl", "OMPI_MCA_pml", "OMPI_MCA_mtl",
                                          "OMPI_MCA_smsc", "OMPI_MCA_coll", "OMPI_MCA_mpi_", "UCX_",
                                          "FI_"};
  for (const char* prefix : kPrefixes)
    if (name.starts_with(prefix)) return true;
  return false;
}

std::map<std::string, std::string> relevant_variables() {
  static const char* const kOtherPrefixes[] = {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUBLAS_", "CUBLASLT_",
                                               "OMPI_COMM_WORLD_SIZE", "SLURM_JOB_ID"};
  std::map<std::string, std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    bool relevant = steers_communication(name);
    for (const char* prefix : kOtherPrefixes) relevant = relevant || name.starts_with(prefix);
    if (relevant) vars[name] = entry.substr(eq + 1);
  }
  return vars;
}

Environment capture_environment() {
  Environment env;
  env.redline_version = REDLINE_VERSION;
  env.git_sha = REDLINE_GIT_SHA;
  env.timestamp_utc = utc_timestamp();
  env.host = hostname();
  env.cpu_model = first_line_value("/proc/cpuinfo", "model name");
  if (env.cpu_model.empty()) env.cpu_model = "unknown";
  env.cpu_count = static_cast<int>(std::thread::hardware_concurrency());
  env.os = os_description();
  env.variables = relevant_variables();
  if (auto why_not = add_nvml_gpu_info(env)) env.gpu_source = "none: " + *why_not;
  return env;
}

}  // namespace redline
