#include "harness/profile/step_breakdown.hpp"

#include <algorithm>

#include "harness/profile/intervals.hpp"

namespace redline::profile {
StepBreakdown break_down(const Trace& trace, const StepWindow& step) {
  StepBreakdown b;
  b.wall_ns = step.end_ns - step.start_ns;
  std::vector<Interval> all, nccl, compute;
  for (const Activity& a : trace.activities) {
    if (!a.is_gpu_work()) continue;
    const Interval part = clipped({a.start_ns, a.end_ns}, step.start_ns, step.end_ns);
    if (part.second <= part.first) continue;
    const Category c = category_of(a);
    b.category_ns[c] += part.second - part.first;
    all.push_back(part);
    if (c == Category::nccl) nccl.push_back(part);
    if (is_compute(c)) compute.push_back(part);
  }
  const std::vector<Interval> busy = merged(std::move(all));
  b.busy_ns = covered(busy);
  if (busy.empty()) {
    b.idle_before_ns = b.wall_ns;  // nothing ran: the whole step waited
    return b;
  }
  b.idle_before_ns = busy.front().first - step.start_ns;
  b.idle_after_ns = step.end_ns - busy.back().second;
  b.idle_between_ns = b.wall_ns - b.busy_ns - b.idle_before_ns - b.idle_after_ns;
  const std::vector<Interval> nccl_time = merged(std::move(nccl));
  b.nccl_ns = covered(nccl_time);
  b.nccl_overlap_ns = shared(nccl_time, merged(std::move(compute)));
  return b;
}

std::vector<KernelTotal> top_kernels(const Trace& trace, const std::vector<StepWindow>& steps, std::size_t top) {
  std::map<std::string, KernelTotal> by_name;
  for (const Activity& a : trace.activities) {
    if (a.kind != ActivityKind::kernel) continue;
    for (const StepWindow& s : steps) {
      const Interval part = clipped({a.start_ns, a.end_ns}, s.start_ns, s.end_ns);
      if (part.second <= part.first) continue;
      KernelTotal& t = by_name[a.name];
      t.name = a.name;
      t.category = category_of(a);
      ++t.count;
      t.total_ns += part.second - part.first;
    }
  }
  std::vector<KernelTotal> totals;
  for (auto& [name, t] : by_name) totals.push_back(std::move(t));
  std::stable_sort(totals.begin(), totals.end(),
                   [](const KernelTotal& a, const KernelTotal& b) { return a.total_ns > b.total_ns; });
  if (totals.size() > top) totals.resize(top);
  return totals;
}

}  // namespace redline::profile
