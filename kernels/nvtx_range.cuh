// Named ranges on the Nsight Systems timeline, so a profile of a benchmark
// shows which phase (warm-up, timed repetitions, verification) a kernel
// belongs to. Without NVTX the range compiles to nothing.
#pragma once

#if defined(REDLINE_HAVE_NVTX)
#include <nvtx3/nvToolsExt.h>
#endif

namespace redline {

// Opens the range on construction and closes it on scope exit, exceptions
// included, so pushes and pops always pair up.
class NvtxRange {
 public:
#if defined(REDLINE_HAVE_NVTX)
  // Costs next to nothing when no profiler is attached: NVTX v3 calls are
  // no-ops until a tool injects itself.
  explicit NvtxRange(const char* name) noexcept { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
#else
  explicit NvtxRange(const char* /*name*/) noexcept {}
#endif

  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace redline
