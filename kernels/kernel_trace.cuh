// Which kernels a piece of work launched, by name and grid, through CUPTI's
// activity API. cuBLASLt does not always report the tile of the algorithm it
// runs (CUBLASLT_ALGO_CONFIG_TILE_ID can be UNDEFINED on Hopper); the
// kernel's name states it, and the grid says how many CTAs really ran
// (persistent kernels launch one per SM, whatever the tile count).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace redline {

struct LaunchedKernel {
  std::string name;  // demangled when CUPTI gives a mangled name
  unsigned grid_x = 0, grid_y = 0, grid_z = 0;
  unsigned block_x = 0, block_y = 0, block_z = 0;
  double duration_ns = 0;  // end - start on the GPU (CUPTI's timestamps)
  unsigned long long ctas() const { return 1ull * grid_x * grid_y * grid_z; }
};

struct KernelTrace {
  std::vector<LaunchedKernel> kernels;  // in launch order
  // Why `kernels` is not the whole story: tracing did not work (no CUPTI, busy
  // profiler, ...), records were lost, or none arrived. nullopt: the full list.
  std::optional<std::string> unavailable;
};

// Enables kernel activity records, runs `work` (which must finish its GPU
// work, e.g. by synchronizing), flushes and disables them. Never throws for
// tracing problems: they go to `unavailable`, and timing never runs under
// tracing. Exceptions from `work` propagate after tracing is disabled.
KernelTrace trace_kernels(const std::function<void()>& work);

}  // namespace redline
