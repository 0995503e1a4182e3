// A profile as the harness's rows and summary: per profiled step one row of
// its wall time, busy and idle shares and idle split, and one row per
// category with time; the summary says how steps were found, the categories'
// mean times, the top kernels, each category against the measured ceilings
// and the largest gap.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/profile/ceilings.hpp"
#include "harness/report/report.hpp"

namespace redline::profile {

struct ProfileInput {
  const Trace& trace;
  FoundSteps found;                 // every step found
  std::size_t skip = 0, limit = 0;  // --skip, --steps (0: all)
  std::optional<Ceilings> ceilings;
  std::size_t top = 10;  // kernels listed
};

// Adds the rows and summary lines to `report`. Throws std::runtime_error
// when no step is left to profile (none found, or --skip takes them all),
// saying why.
void add_profile(Report& report, const ProfileInput& input);

}  // namespace redline::profile
