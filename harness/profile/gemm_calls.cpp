#include "harness/profile/gemm_calls.hpp"

#include <algorithm>

#include "harness/profile/call_kernels.hpp"

namespace redline::profile {

GemmJoin gemm_calls(const Trace& calls, const Trace& trace) {
  // A call that launched several kernels (a split-K reduction after the
  // GEMM) counts once, at its first.
  const auto kernels = kernels_by_external_id(trace);
  GemmJoin join;
  for (const GemmCallRecord& c : calls.gemm_calls) {
    const auto kernel = kernels.find(c.external_id);
    if (kernel == kernels.end()) {
      ++join.without_kernel;
      continue;
    }
    join.gemms.push_back(
        {.time_ns = kernel->second.first_start_ns, .m = c.m, .n = c.n, .k = c.k, .batch = c.batch, .dtype = c.dtype});
  }
  std::sort(join.gemms.begin(), join.gemms.end(),
            [](const GemmCall& a, const GemmCall& b) { return a.time_ns < b.time_ns; });
  return join;
}

}  // namespace redline::profile
