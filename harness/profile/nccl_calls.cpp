#include "harness/profile/nccl_calls.hpp"

#include <algorithm>
#include <map>

#include "harness/profile/call_kernels.hpp"

namespace redline::profile {

NcclJoin nccl_calls(const Trace& calls, const Trace& trace) {
  const auto kernels = kernels_by_external_id(trace);
  std::map<std::int64_t, NcclLaunch> by_id;
  NcclJoin join;
  for (const NcclCallRecord& c : calls.nccl_calls) {
    const auto kernel = kernels.find(c.external_id);
    if (kernel == kernels.end()) {
      ++join.calls_without_kernel;
      continue;
    }
    NcclLaunch& launch = by_id[c.external_id];
    launch.time_ns = kernel->second.first_start_ns;
    launch.kernel_ns = kernel->second.kernel_ns;
    launch.calls.push_back(c);
  }
  for (auto& [id, launch] : by_id) join.launches.push_back(std::move(launch));
  std::sort(join.launches.begin(), join.launches.end(),
            [](const NcclLaunch& a, const NcclLaunch& b) { return a.time_ns < b.time_ns; });
  return join;
}

std::optional<double> message_bytes(const NcclCallRecord& c) {
  if (c.element_bytes <= 0) return std::nullopt;
  const double per_call = static_cast<double>(c.count) * static_cast<double>(c.element_bytes);
  const bool whole_buffer_is_ranks_blocks = c.collective == "all_gather" || c.collective == "reduce_scatter" ||
                                            c.collective == "alltoall" || c.collective == "gather" ||
                                            c.collective == "scatter";
  if (!whole_buffer_is_ranks_blocks) return per_call;
  if (c.ranks <= 0) return std::nullopt;
  return per_call * static_cast<double>(c.ranks);
}

}  // namespace redline::profile
