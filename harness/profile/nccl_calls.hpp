// The recorded NCCL calls joined to the kernels they launched (through
// CUPTI's external correlation, call_kernels.hpp): one NcclLaunch per group
// NCCL launched together, placed at its first kernel's start, so a step gets
// exactly the collectives its NCCL kernels ran. A launch with no kernel in
// the trace (a failed call, lost records, a non-blocking communicator's
// deferred launch) is counted, not placed by guess.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "harness/profile/activity.hpp"

namespace redline::profile {

struct NcclJoin {
  std::vector<NcclLaunch> launches;   // by time
  std::size_t calls_without_kernel = 0;
};

// `calls` holds the ncclcall records (the recorder's file), `trace` the
// correlations (the injection library's trace).
NcclJoin nccl_calls(const Trace& calls, const Trace& trace);

// The call's message size as the collective benchmark's (and nccl-tests') `bytes`
// column gives it, so the busbw curve is read at the right size: the whole
// buffer, which for all_gather, reduce_scatter, alltoall, gather and scatter
// is the per-rank count times the ranks. nullopt where the element size, or the ranks that
// size needs, is unknown.
std::optional<double> message_bytes(const NcclCallRecord& call);

}  // namespace redline::profile
