// Where a profiled program's training steps begin and end, found three
// ways, in order of trust:
//  1. NVTX ranges the program marks its steps with (a name matching
//     --step-range; torch.profiler's "ProfilerStep#3" and a plain "step"
//     match the default);
//  2. lines of its output matching --step-regex (a trainer's per-step log
//     line), placed on the GPU's clock through the trace's clock line: each
//     line ends a step;
//  3. the repeating kernel sequence: the period at which the kernel names
//     repeat most (a layer's period repeats less: not across the forward,
//     backward and step boundaries), each step starting at the kernel of
//     that period with the longest idle gap before it on average (the
//     host's wait between steps).
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "harness/profile/activity.hpp"

namespace redline::profile {

struct StepWindow {
  std::int64_t start_ns = 0, end_ns = 0;
};

struct FoundSteps {
  std::vector<StepWindow> steps;  // in time order, every one found
  std::string method;             // "NVTX ranges \"step\"", "output lines", "repeating kernel sequence (41 kernels)"
  std::string why_none;           // when steps is empty
};

inline constexpr const char* kDefaultStepRange = "[Ss]tep([^a-z]|$)";

// 1. The outermost ranges whose name matches `pattern` (a range inside
// another matching one is not a step of its own).
std::vector<StepWindow> steps_from_ranges(const Trace& trace, const std::regex& pattern);
// 2. Steps between consecutive marks (host steady-clock ns, one per matching
// output line), the first from the first GPU record; nothing without the
// trace's clock line.
std::vector<StepWindow> steps_from_marks(const Trace& trace, const std::vector<std::int64_t>& mark_monotonic_ns);
// 3. Steps of the repeating kernel sequence; with `period_found`, the
// period's length in kernels. Empty when no period repeats at least 3 times.
std::vector<StepWindow> steps_from_kernel_period(const Trace& trace, std::size_t* period_found = nullptr);

// The first way that finds steps. `marks` is empty without --step-regex.
FoundSteps find_steps(const Trace& trace, const std::regex& range_pattern, const std::string& range_text,
                      const std::vector<std::int64_t>& marks);

// Skips the first `skip` (warm-up), keeps at most `limit` (0: all).
std::vector<StepWindow> steps_to_profile(const std::vector<StepWindow>& steps, std::size_t skip, std::size_t limit);

}  // namespace redline::profile
