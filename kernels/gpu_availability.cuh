// Decides, before any benchmark work, whether this process can use a GPU, and
// if not says why in one line, so tools and tests skip (exit 77) instead of
// failing on machines without one.
#pragma once

#include <optional>
#include <string>

namespace redline {

// ctest's SKIP_RETURN_CODE and the suite's "cannot run here" exit status.
inline constexpr int exit_code_no_gpu = 77;

// std::nullopt when `device` can run this binary's kernels. Otherwise one
// line naming the cause: no driver, a driver too old for this runtime, no
// device, or a device this binary has no kernels for (found by launching a
// trivial kernel, the only reliable test once PTX JIT is considered).
// `device` becomes the current device: probe the one this process will use.
std::optional<std::string> no_usable_gpu_reason(int device = 0);

// How many GPUs cudaGetDeviceCount sees (0 when it fails). Creates no context.
int visible_gpu_count();

// The architectures this binary was compiled for, e.g. "sm_80, sm_90, sm_100".
std::string compiled_cuda_architectures();

}  // namespace redline
