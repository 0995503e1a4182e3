// What running a program under redline's profiler takes, for `redline
// profile` and `batch_sweep --profile` alike: a GPU, the injection library
// (libredline_profile_injection.so, found beside the binary or through
// REDLINE_PROFILE_INJECTION), and the variables that make the CUDA driver
// load it and CUPTI see the program's NVTX ranges.
#pragma once

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

// --gemm-shapes: the GEMM recorder (libredline_profile_gemms.so, beside the
// injection library or where REDLINE_PROFILE_GEMMS_LIBRARY says) first in
// the program's LD_PRELOAD, ahead of what the caller's LD_PRELOAD holds, and
// where it writes. Throws CannotRun (exit 77) when the library is missing.
std::vector<std::pair<std::string, std::string>> gemm_shapes_environment(const std::filesystem::path& calls_file);

// The recorded calls' file beside a trace: TRACE.gemms.
std::filesystem::path gemm_calls_file(const std::filesystem::path& trace);

}  // namespace redline::profile
