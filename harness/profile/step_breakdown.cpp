#include "harness/profile/step_breakdown.hpp"

#include <algorithm>
#include <optional>

#include "harness/profile/intervals.hpp"

namespace redline::profile {
namespace {

struct Record {
  const Activity* activity;
  Category category;  // classified once: a kernel's name is read by patterns
};

// Every kernel, copy and memset, in the order of their starts.
std::vector<Record> gpu_records_by_start(const Trace& trace) {
  std::vector<Record> records;
  for (const Activity& a : trace.activities)
    if (a.is_gpu_work()) records.push_back({&a, category_of(a)});
  std::stable_sort(records.begin(), records.end(),
                   [](const Record& x, const Record& y) { return x.activity->start_ns < y.activity->start_ns; });
  return records;
}

StepBreakdown break_down_records(const std::vector<Record>& records, std::size_t from, std::size_t to,
                                 const StepWindow& step) {
  StepBreakdown b;
  b.wall_ns = step.end_ns - step.start_ns;
  std::vector<Interval> all, nccl, compute;
  for (std::size_t i = from; i < to; ++i) {
    const Activity& a = *records[i].activity;
    const Interval part = clipped({a.start_ns, a.end_ns}, step.start_ns, step.end_ns);
    if (part.second <= part.first) continue;
    const Category c = records[i].category;
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

}  // namespace

StepBreakdown break_down(const Trace& trace, const StepWindow& step) {
  const std::vector<Record> records = gpu_records_by_start(trace);
  return break_down_records(records, 0, records.size(), step);
}

// Each step reads only the records that can reach into it, found by their
// starts: one that starts more than the longest record's duration before
// the step ends before it. So the work grows with the records, not with
// records x steps (1.6M kernels in 1600 steps took a minute).
std::vector<StepBreakdown> break_down_steps(const Trace& trace, const std::vector<StepWindow>& steps) {
  const std::vector<Record> records = gpu_records_by_start(trace);
  std::int64_t longest = 0;
  for (const Record& r : records) longest = std::max(longest, r.activity->duration_ns());
  const auto first_starting_at = [&](std::int64_t t) {
    return static_cast<std::size_t>(
        std::partition_point(records.begin(), records.end(), [&](const Record& r) { return r.activity->start_ns < t; }) -
        records.begin());
  };
  std::vector<StepBreakdown> out;
  for (const StepWindow& step : steps)
    out.push_back(break_down_records(records, first_starting_at(step.start_ns - longest), first_starting_at(step.end_ns), step));
  return out;
}

std::optional<std::size_t> step_at(const std::vector<StepWindow>& steps, std::int64_t at) {
  const auto after = std::partition_point(steps.begin(), steps.end(), [&](const StepWindow& s) { return s.start_ns <= at; });
  if (after == steps.begin()) return std::nullopt;
  const auto step = after - 1;
  if (at >= step->end_ns) return std::nullopt;
  return static_cast<std::size_t>(step - steps.begin());
}

std::vector<KernelTotal> top_kernels(const Trace& trace, const std::vector<StepWindow>& steps, std::size_t top) {
  std::map<std::string, KernelTotal> by_name;
  for (const Activity& a : trace.activities) {
    if (a.kind != ActivityKind::kernel) continue;
    // The steps it can reach into: from the one it starts in (or the first
    // after its start) until one starts after it ends.
    const auto from = std::partition_point(steps.begin(), steps.end(),
                                           [&](const StepWindow& s) { return s.end_ns <= a.start_ns; });
    // Its time is counted in every step it reaches into, but it is one call:
    // a kernel across a step boundary (GPU work lags the host's ranges)
    // counted twice made the mean call look half as long.
    bool counted = false;
    for (auto it = from; it != steps.end() && it->start_ns < a.end_ns; ++it) {
      const StepWindow& s = *it;
      const Interval part = clipped({a.start_ns, a.end_ns}, s.start_ns, s.end_ns);
      if (part.second <= part.first) continue;
      KernelTotal& t = by_name[a.name];
      t.name = a.name;
      t.category = category_of(a);
      if (!counted) ++t.count;
      counted = true;
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
