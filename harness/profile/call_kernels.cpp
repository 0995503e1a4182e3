#include "harness/profile/call_kernels.hpp"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

namespace redline::profile {

std::unordered_map<std::int64_t, CallKernels> kernels_by_external_id(const Trace& trace) {
  std::unordered_map<std::int64_t, std::vector<const KernelCorrelation*>> launched;  // by correlation id
  for (const KernelCorrelation& k : trace.kernel_correlations) launched[k.correlation_id].push_back(&k);
  // An API call is tied to its external id once per kind of API record
  // CUPTI keeps (runtime, driver): each of its kernels counts once.
  std::set<std::pair<std::int64_t, std::int64_t>> seen;  // (external id, correlation id)
  std::unordered_map<std::int64_t, CallKernels> calls;
  for (const ExternalCorrelation& e : trace.external_correlations) {
    const auto kernels = launched.find(e.correlation_id);
    if (kernels == launched.end()) continue;  // an API call that launched nothing (a stream query, a malloc)
    if (!seen.emplace(e.external_id, e.correlation_id).second) continue;
    const auto [it, added] = calls.emplace(e.external_id, CallKernels{kernels->second.front()->start_ns, 0});
    for (const KernelCorrelation* k : kernels->second) {
      it->second.first_start_ns = std::min(it->second.first_start_ns, k->start_ns);
      it->second.kernel_ns += k->end_ns - k->start_ns;
    }
  }
  return calls;
}

std::string nothing_recorded(const Trace& trace, Category category, const std::string& none,
                             const std::string& reach) {
  const auto kernels = std::count_if(trace.activities.begin(), trace.activities.end(), [&](const Activity& a) {
    return a.kind == ActivityKind::kernel && category_of(a) == category;
  });
  if (kernels == 0) return none;
  return none + ", yet the trace has " + std::to_string(kernels) + " " + category_name(category) + " kernels: " +
         reach;
}

}  // namespace redline::profile
