// Runs a tool's point function over an ascending size axis. The upward search
// stops at the first OOM (bigger will not fit either); `bisect` then searches
// between the last fit and the first OOM for the exact maximum, starting
// where a memory model predicts the limit when it has one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace redline {

enum class PointStatus { ok, oom, error, timeout, skipped };
std::string to_string(PointStatus status);

struct PointOutcome {
  PointStatus status = PointStatus::ok;
  std::string note;  // why it failed or was skipped; empty when ok
};

struct SweepPoint {
  std::int64_t size = 0;
  PointOutcome outcome;
  bool from_bisect = false;
  bool ran = true;  // false for axis points skipped without running
};

struct SweepOptions {
  bool bisect = false;
  // Fraction (0 <= margin < 1) kept free below the largest fit, for memory
  // that grows during a real run (fragmentation, longer sequences).
  double safety_margin = 0;
  // Stop after this many errors or timeouts in a row: a command that keeps
  // failing will not start working at a larger size.
  int max_consecutive_failures = 2;
  // The largest size a model predicts to fit (e.g. from peak memory against
  // size), asked once when the bisection starts. The search probes it, then
  // up to three sizes beyond it (1, 2 and 4 further, towards the side it did
  // not settle) until the limit is bracketed, then bisects what is left:
  // 2 to 4 probes when the prediction is within 2, and never more than 4
  // beyond a plain bisection when it is far off.
  std::function<std::optional<std::int64_t>()> predict_largest_fit;
};

struct SweepResult {
  std::vector<SweepPoint> points;        // in the order they ran (skipped ones last)
  std::optional<std::int64_t> largest_fit;  // largest size that ran ok
  std::optional<std::int64_t> first_oom;    // smallest size that ran out of memory
  std::optional<std::int64_t> safe_max;     // largest_fit less the safety margin
  std::optional<std::int64_t> largest_run;  // largest size that ran, whatever its status (not one interrupted)
  std::optional<std::int64_t> predicted_fit;  // the prediction asked for when the bisection started
  bool prediction_used = false;               // it lay inside the range left to search, so the search began there
  // The bisection ended with largest_fit and first_oom as neighbours: the
  // next size up really ran out of memory (not a timeout, error or Ctrl-C).
  bool largest_fit_is_exact = false;
  bool interrupted = false;
  std::string stop_reason;  // empty when the whole axis ran

  // The ok points sorted by size (bisect points included).
  std::vector<SweepPoint> ok_points() const;
};

using PointFunction = std::function<PointOutcome(std::int64_t size, bool from_bisect)>;

SweepResult run_sweep(const std::vector<std::int64_t>& axis, const SweepOptions& options,
                      const PointFunction& run_point);

}  // namespace redline
