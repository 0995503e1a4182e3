#include "bench/profile/profile_launch.hpp"

#include <cstdlib>
#include <optional>
#include <set>
#include <vector>

#include "harness/core/usage_error.hpp"

namespace redline::profile {
namespace fs = std::filesystem;
namespace {

constexpr const char* kInjectionName = "libredline_profile_injection.so";
constexpr const char* kGemmsName = "libredline_profile_gemms.so";
constexpr const char* kNcclName = "libredline_profile_nccl.so";

// What `variable` names, else beside this binary as the build and an
// install lay the libraries out.
std::optional<fs::path> profiler_library(const char* name, const char* variable) {
  if (const char* named = std::getenv(variable); named && *named)
    return fs::exists(named) ? std::optional<fs::path>(named) : std::nullopt;
  std::error_code ec;
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (ec) return std::nullopt;
  for (const fs::path& candidate : {exe_dir / ".." / "kernels" / name, exe_dir / name, exe_dir / ".." / "lib" / name})
    if (fs::exists(candidate, ec)) return fs::weakly_canonical(candidate, ec);
  return std::nullopt;
}

std::optional<fs::path> injection_library() { return profiler_library(kInjectionName, "REDLINE_PROFILE_INJECTION"); }

// Where CUPTI is, for NVTX_INJECTION64_PATH: CUPTI records the program's
// NVTX ranges only when NVTX loads it.
std::string cupti_library() {
  if (const char* named = std::getenv("REDLINE_CUPTI_LIBRARY"); named && *named) return named;
#ifdef REDLINE_CUPTI_LIBRARY
  return REDLINE_CUPTI_LIBRARY;
#else
  return "libcupti.so";
#endif
}

}  // namespace

fs::path require_profiling_here(const Environment& env) {
  if (env.gpus.empty()) throw CannotRun("no GPU to profile on (" + env.gpu_source + ")");
  const auto library = injection_library();
  if (!library)
    throw CannotRun(std::string("no ") + kInjectionName +
                    ": redline was built without CUPTI, or the library is not beside the redline binary "
                    "(REDLINE_PROFILE_INJECTION names it)");
  return *library;
}

std::vector<std::pair<std::string, std::string>> profiling_environment(const fs::path& library, const fs::path& trace) {
  return {{"CUDA_INJECTION64_PATH", library.string()},
          {"NVTX_INJECTION64_PATH", cupti_library()},
          {"REDLINE_PROFILE_OUT", trace.string()}};
}

std::vector<std::pair<std::string, std::string>> call_recorders_environment(const CallRecorders& wanted,
                                                                            const fs::path& trace) {
  struct Recorder {
    bool wanted;
    const char *flag, *library, *library_variable, *file_variable;
    fs::path file;
  };
  const Recorder recorders[] = {
      {wanted.gemm_shapes, "--gemm-shapes", kGemmsName, "REDLINE_PROFILE_GEMMS_LIBRARY", "REDLINE_PROFILE_GEMMS",
       gemm_calls_file(trace)},
      {wanted.nccl_sizes, "--nccl-sizes", kNcclName, "REDLINE_PROFILE_NCCL_LIBRARY", "REDLINE_PROFILE_NCCL",
       nccl_calls_file(trace)}};
  std::vector<std::pair<std::string, std::string>> env;
  std::string preload;
  for (const Recorder& r : recorders) {
    if (!r.wanted) continue;
    const auto library = profiler_library(r.library, r.library_variable);
    if (!library)
      throw CannotRun(std::string(r.flag) + " needs " + r.library +
                      ": redline was built without CUPTI (or NCCL), or the library is not beside the redline binary (" +
                      r.library_variable + " names it)");
    if (!preload.empty()) preload += ':';
    preload += library->string();
    env.emplace_back(r.file_variable, r.file.string() + ".%p");  // a file a process: settle_recorder_files
  }
  if (preload.empty()) return env;
  if (const char* existing = std::getenv("LD_PRELOAD"); existing && *existing) preload += std::string(":") + existing;
  env.emplace_back("LD_PRELOAD", preload);
  return env;
}

fs::path gemm_calls_file(const fs::path& trace) { return fs::path(trace.string() + ".gemms"); }
fs::path nccl_calls_file(const fs::path& trace) { return fs::path(trace.string() + ".nccl"); }

namespace {

// The per-process files of one recorder file: FILE.PID, by process id.
std::vector<std::pair<std::int64_t, fs::path>> process_files(const fs::path& file) {
  std::vector<std::pair<std::int64_t, fs::path>> found;
  std::error_code ec;
  const std::string prefix = file.filename().string() + ".";
  for (fs::directory_iterator it(file.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string pid = name.substr(prefix.size());
    if (pid.size() > 18 || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    found.emplace_back(std::stoll(pid), it->path());
  }
  return found;
}

}  // namespace

int settle_recorder_files(const fs::path& trace, std::int64_t traced_pid) {
  std::set<std::int64_t> others;
  for (const fs::path& file : {gemm_calls_file(trace), nccl_calls_file(trace)}) {
    const auto files = process_files(file);
    std::error_code ec;
    for (const auto& [pid, path] : files) {
      if (pid == traced_pid) {
        fs::rename(path, file, ec);
      } else {
        others.insert(pid);
        fs::remove(path, ec);
      }
    }
  }
  return static_cast<int>(others.size());
}

void remove_recorder_files(const fs::path& trace) {
  std::error_code ec;
  for (const fs::path& file : {gemm_calls_file(trace), nccl_calls_file(trace)}) {
    fs::remove(file, ec);
    for (const auto& [pid, path] : process_files(file)) fs::remove(path, ec);
  }
}

}  // namespace redline::profile
