#include "harness/profile/trial_profile.hpp"

#include <algorithm>
#include <cmath>
#include <regex>

#include "harness/core/units.hpp"
#include "harness/profile/ceilings.hpp"
#include "harness/profile/step_detection.hpp"

namespace redline::profile {
namespace {

struct Span {
  double low = 0, high = 0;
  bool any = false;
  void add(double v) {
    low = any ? std::min(low, v) : v, high = any ? std::max(high, v) : v;
    any = true;
  }
  std::string text() const {
    const std::string lo = format_number(low, 0), hi = format_number(high, 0);
    return (lo == hi ? lo : lo + "-" + hi) + "%";
  }
};

}  // namespace

std::optional<TrialProfile> profile_trial(const Trace& trace, std::size_t skip) {
  const FoundSteps found = find_steps(trace, std::regex(kDefaultStepRange), kDefaultStepRange, {});
  const std::vector<StepWindow> steps = steps_to_profile(found.steps, skip, 0);
  if (steps.empty()) return std::nullopt;
  const ProfileTotals totals = total_over(trace, steps);
  const double wall = static_cast<double>(totals.sum.wall_ns);
  if (wall <= 0) return std::nullopt;
  TrialProfile p;
  p.steps = steps.size();
  p.busy_pct = 100 * static_cast<double>(totals.sum.busy_ns) / wall;
  p.idle_pct = 100 - p.busy_pct;
  for (const auto& [category, ns] : totals.sum.category_ns)
    if (100 * static_cast<double>(ns) / wall > p.top_pct) p.top_pct = 100 * static_cast<double>(ns) / wall, p.top_category = category_name(category);
  return p;
}

void add_trial_profile(Row& row, const std::optional<TrialProfile>& profile, const std::string& why) {
  const auto note = [&](const std::string& text) { row.note += (row.note.empty() ? "" : "; ") + text; };
  if (!profile) {
    note("not profiled: " + why);
    return;
  }
  row.metric("gpu_busy_pct", profile->busy_pct).metric("gpu_idle_pct", profile->idle_pct);
  row.metric("top_category_pct", profile->top_pct);
  note("top: " + profile->top_category + " " + format_number(profile->top_pct, 0) + "% (" +
       std::to_string(profile->steps) + " steps profiled)");
}

std::optional<std::string> idle_around_saturation(const std::vector<Row>& rows, std::int64_t saturation_batch) {
  Span below, from;
  for (const Row& row : rows) {
    if (row.status != RowStatus::ok) continue;
    const auto idle = row.metric_value("gpu_idle_pct");
    const auto batch = row.param_value("batch_size");
    if (!idle || !batch || std::isnan(*idle)) continue;
    (std::stoll(*batch) < saturation_batch ? below : from).add(*idle);
  }
  if (!below.any || !from.any) return std::nullopt;
  const std::string b = std::to_string(saturation_batch);
  return "below batch " + b + " the GPU is idle " + below.text() + " of the step; from " + b + " on " + from.text();
}

}  // namespace redline::profile
