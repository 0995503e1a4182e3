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

// Between the largest fit below the first OOM and that OOM, narrows the gap
// until they are neighbours: first around the predicted limit, then by
// halving. A failure other than OOM counts as "does not fit" so the answer
// stays on the safe side.
class Bisection {
 public:
  Bisection(SweepResult& result, const SweepOptions& options, const PointFunction& run_point, std::int64_t lo)
      : result_(result), options_(options), run_point_(run_point), lo_(lo), hi_(*result.first_oom) {}

  void run() {
    if (options_.predict_largest_fit) result_.predicted_fit = options_.predict_largest_fit();
    const auto& predicted = result_.predicted_fit;
    result_.prediction_used = predicted && *predicted > lo_ && *predicted < hi_;
    if (result_.prediction_used) around_prediction();
    while (hi_ - lo_ > 1 && probe(lo_ + (hi_ - lo_) / 2)) {
    }
    result_.largest_fit_is_exact = !stopped_ && hi_is_oom_ && result_.largest_fit == lo_;
  }

 private:
  // The prediction, then 1, 2 and 4 sizes further on the side it left open:
  // fits at p and p+1 and an OOM at p+3 leave only p+2 to try.
  void around_prediction() {
    const std::int64_t predicted = *result_.predicted_fit;
    if (!probe(predicted)) return;
    const bool fitted = lo_ == predicted;
    std::int64_t step = 1;
    for (int k = 0; k < 3 && hi_ - lo_ > 1; ++k, step *= 2) {
      const std::int64_t next = fitted ? lo_ + step : hi_ - step;
      if (next <= lo_ || next >= hi_ || !probe(next)) return;
      if ((fitted && hi_ == next) || (!fitted && lo_ == next)) return;  // the limit is bracketed
    }
  }

  // Runs one size; false when the search must stop (Ctrl-C, failures).
  bool probe(std::int64_t size) {
    if (interrupted()) {
      result_.interrupted = true;
      result_.stop_reason = "interrupted during bisection";
      return stop();
    }
    if (options_.max_consecutive_failures > 0 && failures_in_a_row_ >= options_.max_consecutive_failures) {
      result_.stop_reason = "bisection stopped after " + std::to_string(failures_in_a_row_) + " failures in a row";
      return stop();
    }
    const PointOutcome outcome = run_point_(size, true);
    result_.points.push_back({size, outcome, true});
    failures_in_a_row_ = is_failure(outcome.status) ? failures_in_a_row_ + 1 : 0;
    if (outcome.status == PointStatus::ok) {
      lo_ = std::max(lo_, size);
      record_fit(result_, size);
    } else {
      hi_ = std::min(hi_, size);
      hi_is_oom_ = outcome.status == PointStatus::oom;
      if (hi_is_oom_ && size < *result_.first_oom) result_.first_oom = size;
    }
    return true;
  }

  bool stop() {
    stopped_ = true;
    return false;
  }

  SweepResult& result_;
  const SweepOptions& options_;
  const PointFunction& run_point_;
  std::int64_t lo_, hi_;
  bool hi_is_oom_ = true, stopped_ = false;
  int failures_in_a_row_ = 0;
};

void bisect(SweepResult& result, const SweepOptions& options, const PointFunction& run_point) {
  std::int64_t lo = 0;
  for (const auto& p : result.points)
    if (p.outcome.status == PointStatus::ok && p.size < *result.first_oom) lo = std::max(lo, p.size);
  if (lo == 0) return;  // nothing fits: there is no range to search
  Bisection(result, options, run_point, lo).run();
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
  // A Ctrl-C during the last point, or during the one that stopped the sweep,
  // finds no next point to stop before: it still ends the sweep here, so no
  // bisection starts and the reason says so.
  if (!result.interrupted && interrupted()) {
    result.interrupted = true;
    result.stop_reason = result.stop_reason.empty() ? "interrupted" : result.stop_reason + ", then interrupted";
  }
  // The points never run are recorded too, so a report shows the whole axis.
  const std::string skip_note = result.stop_reason.empty() ? "not run" : "not run: " + result.stop_reason;
  for (; next < axis.size(); ++next)
    result.points.push_back({axis[next], {PointStatus::skipped, skip_note}, false, false});

  if (options.bisect && result.first_oom && !result.interrupted) bisect(result, options, run_point);
  if (result.interrupted && result.stop_reason.empty()) result.stop_reason = "interrupted";

  // A point cut short by Ctrl-C comes back skipped: it started but did not run, so it is not one.
  for (const auto& p : result.points)
    if (p.ran && p.outcome.status != PointStatus::skipped && (!result.largest_run || p.size > *result.largest_run))
      result.largest_run = p.size;
  if (result.largest_fit) {
    const auto reduced = static_cast<std::int64_t>(
        std::floor(static_cast<double>(*result.largest_fit) * (1.0 - options.safety_margin)));
    result.safe_max = std::max<std::int64_t>(1, reduced);
  }
  return result;
}

}  // namespace redline
