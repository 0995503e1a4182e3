// What running a program under redline's profiler takes, for `redline
// profile` and `batch_sweep --profile` alike: a GPU, the injection library
// (libredline_profile_injection.so, found beside the binary or through
// REDLINE_PROFILE_INJECTION), and the variables that make the CUDA driver
// load it and CUPTI see the program's NVTX ranges.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "harness/core/environment.hpp"

namespace redline::profile {

// Throws CannotRun (exit 77) saying why when this machine has no GPU or the
// library is missing; otherwise the library's path.
std::filesystem::path require_profiling_here(const Environment& env);

// The program's variables: the injection library, CUPTI as NVTX's
// injection, and where the trace goes.
std::vector<std::pair<std::string, std::string>> profiling_environment(const std::filesystem::path& library,
                                                                       const std::filesystem::path& trace);

// The call recorders asked for: --gemm-shapes's (libredline_profile_gemms.so)
// and --nccl-sizes's (libredline_profile_nccl.so), beside the injection
// library or where REDLINE_PROFILE_GEMMS_LIBRARY / REDLINE_PROFILE_NCCL_LIBRARY
// say, first in the program's LD_PRELOAD, ahead of what the caller's holds,
// and the files they write beside the trace. Throws CannotRun (exit 77),
// naming the flag, when a library is missing.
struct CallRecorders {
  bool gemm_shapes = false, nccl_sizes = false;
};
std::vector<std::pair<std::string, std::string>> call_recorders_environment(const CallRecorders& wanted,
                                                                            const std::filesystem::path& trace);

// The recorded calls' files beside a trace: TRACE.gemms, TRACE.nccl.
std::filesystem::path gemm_calls_file(const std::filesystem::path& trace);
std::filesystem::path nccl_calls_file(const std::filesystem::path& trace);

// Each process of the program records its calls into a file of its own
// (TRACE.gemms.PID), since which process holds the trace is known only once
// it has run (the first to lock it: a program of several ranks has several
// recorders). After the run the traced process's files take the names a
// saved trace has (TRACE.gemms) and the others are removed; the count of
// other processes that recorded calls is returned.
int settle_recorder_files(const std::filesystem::path& trace, std::int64_t traced_pid);
// Removes TRACE.gemms, TRACE.nccl and every process's file of them (a
// previous run's, before a run; the temporaries, after one).
void remove_recorder_files(const std::filesystem::path& trace);

}  // namespace redline::profile
