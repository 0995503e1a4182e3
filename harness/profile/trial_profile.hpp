// A batch-sweep trial profiled: its steps' GPU busy and idle shares and the
// category that took the most time, added to the trial's row; and over the
// sweep, why the saturation point is where it is: how idle the GPU sits
// below it and from it on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/profile/activity.hpp"
#include "harness/report/report.hpp"

namespace redline::profile {

struct TrialProfile {
  std::size_t steps = 0;
  double busy_pct = 0, idle_pct = 0;
  std::string top_category;
  double top_pct = 0;  // its time over the steps' wall time
};

// The trial's steps found as `redline profile` finds them (default step
// ranges, then the repeating kernel sequence), the first `skip` dropped;
// nullopt when none is left.
std::optional<TrialProfile> profile_trial(const Trace& trace, std::size_t skip);

// gpu_busy_pct, gpu_idle_pct and top_category_pct on the row, the top
// category's name in its note; or, when the trial could not be profiled,
// `why` in the note.
void add_trial_profile(Row& row, const std::optional<TrialProfile>& profile, const std::string& why);

// "below batch 16 the GPU is idle 35-60% of the step; from 16 on 4-8%", from
// the ok rows' gpu_idle_pct and batch_size; nullopt without a saturation
// batch or without profiled rows on both sides.
std::optional<std::string> idle_around_saturation(const std::vector<Row>& rows, std::int64_t saturation_batch);

}  // namespace redline::profile
