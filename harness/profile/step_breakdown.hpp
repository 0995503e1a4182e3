// One step of a profile: its wall time, how much of it the GPU was busy and
// where it sat idle (before the step's first GPU record, between records,
// after the last), the GPU time by category, and how much of NCCL's time
// ran while compute kernels ran too.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/profile/profile_category.hpp"
#include "harness/profile/step_detection.hpp"

namespace redline::profile {

struct StepBreakdown {
  std::int64_t wall_ns = 0;
  std::int64_t busy_ns = 0;  // the union of every kernel, copy and memset in the step
  std::int64_t idle_before_ns = 0, idle_between_ns = 0, idle_after_ns = 0;
  // Each category's summed durations (concurrent records of one category
  // both count, as torch.profiler and Nsight Systems sum them).
  std::map<Category, std::int64_t> category_ns;
  std::int64_t nccl_ns = 0;          // the union of NCCL's kernels
  std::int64_t nccl_overlap_ns = 0;  // the part of it that compute kernels share
  std::int64_t idle_ns() const { return idle_before_ns + idle_between_ns + idle_after_ns; }
};

// Records are clipped to the window: a kernel running across a step boundary
// counts in each step for its part.
StepBreakdown break_down(const Trace& trace, const StepWindow& step);
// The same for each of `steps` (in time order, not overlapping), in one
// pass over the trace.
std::vector<StepBreakdown> break_down_steps(const Trace& trace, const std::vector<StepWindow>& steps);
// The index of the step (in time order, not overlapping) that holds `at`.
std::optional<std::size_t> step_at(const std::vector<StepWindow>& steps, std::int64_t at);

struct KernelTotal {
  std::string name;
  Category category = Category::elementwise;
  std::int64_t count = 0, total_ns = 0;
  double mean_ns() const { return count ? static_cast<double>(total_ns) / static_cast<double>(count) : 0; }
};

// The kernels by total time within the steps (in time order, not
// overlapping), largest first, at most `top`.
std::vector<KernelTotal> top_kernels(const Trace& trace, const std::vector<StepWindow>& steps, std::size_t top);

}  // namespace redline::profile
