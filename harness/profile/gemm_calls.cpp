#include "harness/profile/gemm_calls.hpp"

#include <algorithm>
#include <unordered_map>

namespace redline::profile {

GemmJoin gemm_calls(const Trace& calls, const Trace& trace) {
  std::unordered_map<std::int64_t, std::int64_t> kernel_start;  // by correlation id
  for (const KernelCorrelation& k : trace.kernel_correlations) {
    const auto [it, added] = kernel_start.emplace(k.correlation_id, k.start_ns);
    if (!added) it->second = std::min(it->second, k.start_ns);
  }
  // A call that launched several kernels (a split-K reduction after the
  // GEMM) counts once, at its first.
  std::unordered_map<std::int64_t, std::int64_t> first_kernel;  // by external id
  for (const ExternalCorrelation& e : trace.external_correlations) {
    const auto kernel = kernel_start.find(e.correlation_id);
    if (kernel == kernel_start.end()) continue;  // an API call that launched nothing (a stream query, a malloc)
    const auto [it, added] = first_kernel.emplace(e.external_id, kernel->second);
    if (!added) it->second = std::min(it->second, kernel->second);
  }
  GemmJoin join;
  for (const GemmCallRecord& c : calls.gemm_calls) {
    const auto kernel = first_kernel.find(c.external_id);
    if (kernel == first_kernel.end()) {
      ++join.without_kernel;
      continue;
    }
    join.gemms.push_back({.time_ns = kernel->second, .m = c.m, .n = c.n, .k = c.k, .batch = c.batch, .dtype = c.dtype});
  }
  std::sort(join.gemms.begin(), join.gemms.end(),
            [](const GemmCall& a, const GemmCall& b) { return a.time_ns < b.time_ns; });
  return join;
}

}  // namespace redline::profile
