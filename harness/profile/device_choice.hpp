// One GPU a profile: a process that drives several GPUs (JAX on one host,
// a pipeline split with device_map, DataParallel) has records on each, and
// their union would read "some GPU was busy", with NCCL on one GPU counted
// as overlapped by compute on another. So the profile keeps one device's
// records: the one asked for, else the one with the most GPU time.
#pragma once

#include <optional>
#include <string>

#include "harness/profile/activity.hpp"

namespace redline::profile {

// Leaves in `trace` only `wanted`'s kernels, copies, memsets and kernel
// correlations (NVTX ranges are the host's and stay), or, without `wanted`,
// the busiest device's. Returns the summary line saying which device was
// kept when the trace held more than one; nothing when it held one.
// Throws UsageError naming --device when `wanted` ran nothing here.
std::optional<std::string> keep_one_device(Trace& trace, std::optional<int> wanted);

}  // namespace redline::profile
