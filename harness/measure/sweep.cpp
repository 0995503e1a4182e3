#include "harness/measure/sweep.hpp"

#include <algorithm>
#include <cmath>

#include "harness/core/interrupt.hpp"

namespace redline {

std::string to_string(PointStatus status) {
  switch (status) {
    case PointStatus::ok: return "ok";
    case PointStatus::oom: return "oom";
    case PointStatus::error: return "error";
    case PointStatus::timeout: return "timeout";
    case PointStatus::skipped: return "skipped";
  }
  return "unknown";
}

std::vector<SweepPoint> SweepResult::ok_points() const {
  std::vector<SweepPoint> ok;
  for (const auto& p : points)
    if (p.outcome.status == PointStatus::ok) ok.push_back(p);
  std::sort(ok.begin(), ok.end(), [](const auto& a, const auto& b) { return a.size < b.size; });
  return ok;
}

namespace {

bool is_failure(PointStatus s) { return s == PointStatus::error || s == PointStatus::timeout; }

void record_fit(SweepResult& result, std::int64_t size) {
  if (!result.largest_fit || size > *result.largest_fit) result.largest_fit = size;
}

// Between the largest fit below the first OOM and that OOM, halve the gap
// until they are neighbours. A failure other than OOM counts as "does not
// fit" so the answer stays on the safe side.
void bisect(SweepResult& result, const SweepOptions& options, const PointFunction& run_point) {
  std::int64_t lo = 0;
  for (const auto& p : result.points)
    if (p.outcome.status == PointStatus::ok && p.size < *result.first_oom) lo = std::max(lo, p.size);
  if (lo == 0) return;  // nothing fits: there is no range to search
  std::int64_t hi = *result.first_oom;
  bool hi_is_oom = true;
  int failures_in_a_row = 0;
  while (hi - lo > 1) {
    if (interrupted()) {
      result.interrupted = true;
      result.stop_reason = "interrupted during bisection";
      return;
    }
    if (options.max_consecutive_failures > 0 && failures_in_a_row >= options.max_consecutive_failures) {
      result.stop_reason = "bisection stopped after " + std::to_string(failures_in_a_row) + " failures in a row";
      return;
    }
    const std::int64_t mid = lo + (hi - lo) / 2;
    PointOutcome outcome = run_point(mid, true);
    result.points.push_back({mid, outcome, true});
    failures_in_a_row = is_failure(outcome.status) ? failures_in_a_row + 1 : 0;
    if (outcome.status == PointStatus::ok) {
      lo = mid;
      record_fit(result, mid);
    } else {
      hi = mid;
      hi_is_oom = outcome.status == PointStatus::oom;
      if (hi_is_oom) result.first_oom = mid;
    }
  }
  result.largest_fit_is_exact = hi_is_oom && result.largest_fit == lo;
}

}  // namespace

SweepResult run_sweep(const std::vector<std::int64_t>& axis, const SweepOptions& options,
                      const PointFunction& run_point) {
  SweepResult result;
  int failures_in_a_row = 0;
  std::size_t next = 0;
  for (; next < axis.size(); ++next) {
    if (interrupted()) {
      result.interrupted = true;
      result.stop_reason = "interrupted";
      break;
    }
    const std::int64_t size = axis[next];
    PointOutcome outcome = run_point(size, false);
    result.points.push_back({size, outcome, false});
    if (outcome.status == PointStatus::ok) record_fit(result, size);
    failures_in_a_row = is_failure(outcome.status) ? failures_in_a_row + 1 : 0;
    if (outcome.status == PointStatus::oom) {
      result.first_oom = size;
      result.stop_reason = "out of memory at " + std::to_string(size);
      ++next;
      break;
    }
    if (options.max_consecutive_failures > 0 && failures_in_a_row >= options.max_consecutive_failures) {
      result.stop_reason = std::to_string(failures_in_a_row) + " failures in a row";
      ++next;
      break;
    }
  }
  // The points never run are recorded too, so a report shows the whole axis.
  const std::string skip_note = result.stop_reason.empty() ? "not run" : "not run: " + result.stop_reason;
  for (; next < axis.size(); ++next)
    result.points.push_back({axis[next], {PointStatus::skipped, skip_note}, false, false});

  if (options.bisect && result.first_oom && !result.interrupted) bisect(result, options, run_point);
  if (result.interrupted && result.stop_reason.empty()) result.stop_reason = "interrupted";

  if (result.largest_fit) {
    const auto reduced = static_cast<std::int64_t>(
        std::floor(static_cast<double>(*result.largest_fit) * (1.0 - options.safety_margin)));
    result.safe_max = std::max<std::int64_t>(1, reduced);
  }
  return result;
}

}  // namespace redline
