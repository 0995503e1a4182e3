#include "harness/profile/step_detection.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "harness/core/regex_text.hpp"

namespace redline::profile {
namespace {

std::vector<const Activity*> kernels_in_time_order(const Trace& trace) {
  std::vector<const Activity*> kernels;
  for (const Activity& a : trace.activities)
    if (a.kind == ActivityKind::kernel) kernels.push_back(&a);
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const Activity* a, const Activity* b) { return a->start_ns < b->start_ns; });
  return kernels;
}

// The names as small integers, so periods compare fast.
std::vector<int> name_ids(const std::vector<const Activity*>& kernels) {
  std::map<std::string, int> ids;
  std::vector<int> out;
  for (const Activity* k : kernels) out.push_back(ids.emplace(k->name, static_cast<int>(ids.size())).first->second);
  return out;
}

// The first index of the sequence's second half that period p compares
// (name i with name i + p), and how many names it compares.
std::pair<std::size_t, std::size_t> compared_span(std::size_t n, std::size_t p) {
  const std::size_t from = n / 2 >= p ? n / 2 - p : 0;
  return {from, n - p - from};
}

// Whether period p could repeat 95% of the second half, judged on 128
// positions drawn over it (a fixed sequence, so a run is repeatable):
// without it every period that repeats nothing costs 5% of n comparisons,
// and the search n^2/120 in all (25 s for 1.6M kernels). Drawn rather than
// evenly spaced, whose stride could keep landing on one phase of the
// period. A period at 95% fails more than a quarter of 128 draws almost
// never (the binomial tail is below 1e-9).
bool may_repeat(const std::vector<int>& names, std::size_t p) {
  constexpr int kDraws = 128, kAllowedMisses = kDraws / 4;
  const auto [from, compared] = compared_span(names.size(), p);
  if (compared <= static_cast<std::size_t>(kDraws)) return true;  // the full count is as cheap
  std::uint64_t state = 0x9E3779B97F4A7C15ull ^ p;
  int misses = 0;
  for (int d = 0; d < kDraws; ++d) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const std::size_t i = from + static_cast<std::size_t>((state >> 33) % compared);
    if (names[i] != names[i + p] && ++misses > kAllowedMisses) return false;
  }
  return true;
}

// How much of the sequence's second half repeats at period p (name i equals
// name i + p); nullopt once more than 5% has failed.
std::optional<double> repeat_share(const std::vector<int>& names, std::size_t p) {
  const std::size_t n = names.size();
  const auto [from, compared] = compared_span(n, p);
  const auto allowed = static_cast<std::size_t>(0.05 * static_cast<double>(compared));
  std::size_t failed = 0;
  for (std::size_t i = from; i + p < n; ++i)
    if (names[i] != names[i + p] && ++failed > allowed) return std::nullopt;
  return compared ? std::optional<double>(1.0 - static_cast<double>(failed) / static_cast<double>(compared)) : std::nullopt;
}

// The step's period: of the periods at which at least 95% of the second half
// repeats (the first steps may differ: warm-up launches extra kernels), the
// one that repeats most, the shortest of equals. A layer's kernels repeat
// too, at a shorter period, but not across the forward/backward and
// step boundaries, where the step's own period holds. At least 3 periods.
// A period that repeats everywhere cannot be beaten by a longer one, which
// ends the search (its multiples all repeat as well). Where some kernels
// vary (a GEMM variant picked anew), the step's multiples repeat as well as
// the step, and one wins by chance: the shortest divisor of the winner
// whose share is within the winner's sampling noise (three standard
// errors; none for a winner that repeats everywhere) is the step.
std::optional<std::size_t> repeating_period(const std::vector<int>& names) {
  std::map<std::size_t, double> shares;  // of the periods that repeat 95%
  std::optional<std::size_t> best;
  double best_share = 0;
  for (std::size_t p = 1; p * 3 <= names.size(); ++p) {
    if (!may_repeat(names, p)) continue;
    const auto share = repeat_share(names, p);
    if (!share) continue;
    shares[p] = *share;
    if (*share <= best_share + 1e-12) continue;
    best = p, best_share = *share;
    if (best_share >= 1.0) break;
  }
  if (!best) return best;
  const double compared = static_cast<double>(compared_span(names.size(), *best).second);
  const double noise = 3 * std::sqrt(best_share * (1 - best_share) / compared);
  for (const auto& [p, share] : shares)
    if (p < *best && *best % p == 0 && share >= best_share - noise) return p;
  return best;
}

// Where the GPU last went idle before kernels[i] started: the end of the
// kernels before it, or its own start where one of them still ran.
std::vector<std::int64_t> idle_points(const std::vector<const Activity*>& kernels) {
  std::vector<std::int64_t> points;
  std::int64_t busy_until = kernels.front()->start_ns;
  for (const Activity* k : kernels) {
    points.push_back(std::min(k->start_ns, busy_until));
    busy_until = std::max(busy_until, k->end_ns);
  }
  return points;
}

// Where in the period steps start: the phase with the longest mean idle gap
// before its kernel.
std::size_t step_phase(const std::vector<const Activity*>& kernels, const std::vector<std::int64_t>& idle_from,
                       std::size_t period) {
  std::vector<double> gap(period, 0);
  std::vector<int> count(period, 0);
  for (std::size_t i = 1; i < kernels.size(); ++i) {
    gap[i % period] += static_cast<double>(kernels[i]->start_ns - idle_from[i]);
    ++count[i % period];
  }
  std::size_t best = 0;
  for (std::size_t phase = 1; phase < period; ++phase)
    if (count[phase] && gap[phase] / count[phase] > gap[best] / std::max(count[best], 1)) best = phase;
  return best;
}

std::int64_t last_gpu_end(const Trace& trace) {
  std::int64_t end = std::numeric_limits<std::int64_t>::min();
  for (const Activity& a : trace.activities)
    if (a.is_gpu_work()) end = std::max(end, a.end_ns);
  return end;
}

std::int64_t first_gpu_start(const Trace& trace) {
  std::int64_t start = std::numeric_limits<std::int64_t>::max();
  for (const Activity& a : trace.activities)
    if (a.is_gpu_work()) start = std::min(start, a.start_ns);
  return start;
}

}  // namespace

std::vector<StepWindow> steps_from_ranges(const Trace& trace, const std::regex& pattern) {
  std::vector<StepWindow> matching;
  for (const Activity& a : trace.activities)  // an instant (a mark, a range of no length) is no step
    if (a.kind == ActivityKind::range && a.end_ns > a.start_ns) {
      const std::string_view name = regex_safe_prefix(a.name);
      if (std::regex_search(name.begin(), name.end(), pattern)) matching.push_back({a.start_ns, a.end_ns});
    }
  std::sort(matching.begin(), matching.end(),
            [](const StepWindow& a, const StepWindow& b) { return a.start_ns < b.start_ns || (a.start_ns == b.start_ns && a.end_ns > b.end_ns); });
  std::vector<StepWindow> outermost;
  for (const StepWindow& w : matching)
    if (outermost.empty() || w.start_ns >= outermost.back().end_ns) outermost.push_back(w);
  return outermost;
}

std::vector<StepWindow> steps_from_marks(const Trace& trace, const std::vector<std::int64_t>& mark_monotonic_ns) {
  std::vector<StepWindow> steps;
  if (!trace.has_clock || mark_monotonic_ns.empty()) return steps;
  std::int64_t start = first_gpu_start(trace);
  if (start == std::numeric_limits<std::int64_t>::max()) return steps;
  for (const std::int64_t mark : mark_monotonic_ns) {
    const std::int64_t end = mark - trace.clock_offset_ns;
    if (end <= start) continue;  // a line printed before any GPU work
    steps.push_back({start, end});
    start = end;
  }
  return steps;
}

std::vector<StepWindow> steps_from_kernel_period(const Trace& trace, std::size_t* period_found) {
  const std::vector<const Activity*> kernels = kernels_in_time_order(trace);
  std::vector<StepWindow> steps;
  const auto period = repeating_period(name_ids(kernels));
  if (!period) return steps;
  if (period_found) *period_found = *period;
  // A step starts where the GPU went idle before its first kernel, so the
  // wait between steps is its idle time before its first record: the host's
  // work (data loading), as in every other way of finding steps.
  const std::vector<std::int64_t> starts = idle_points(kernels);
  const std::size_t phase = step_phase(kernels, starts, *period);
  // Whole periods only: the kernels left after the last (an evaluation, a
  // checkpoint, a step cut short) are not a step.
  for (std::size_t first = phase; first + *period <= kernels.size(); first += *period) {
    const std::size_t next = first + *period;
    steps.push_back({starts[first], next < kernels.size() ? starts[next] : last_gpu_end(trace)});
  }
  return steps;
}

FoundSteps find_steps(const Trace& trace, const std::regex& range_pattern, const std::string& range_text,
                      const std::vector<std::int64_t>& marks) {
  FoundSteps found;
  if (found.steps = steps_from_ranges(trace, range_pattern); !found.steps.empty()) {
    found.method = "NVTX ranges matching \"" + range_text + "\"";
    return found;
  }
  if (!marks.empty()) {
    found.steps = steps_from_marks(trace, marks);
    if (!found.steps.empty()) {
      found.method = "output lines matching --step-regex";
      return found;
    }
  }
  std::size_t period = 0;
  found.steps = steps_from_kernel_period(trace, &period);
  if (!found.steps.empty()) {
    found.method = "the repeating kernel sequence (" + std::to_string(period) + " kernels a step)";
    return found;
  }
  found.why_none = "no NVTX range matches \"" + range_text + "\"" +
                   (marks.empty() ? "" : trace.has_clock ? ", no output line fell among the GPU's records"
                                                        : ", the trace has no clock line to place the output lines") +
                   ", and the kernel sequence does not repeat 3 times";
  return found;
}

std::vector<StepWindow> steps_to_profile(const std::vector<StepWindow>& steps, std::size_t skip, std::size_t limit) {
  if (skip >= steps.size()) return {};
  const auto first = steps.begin() + static_cast<std::ptrdiff_t>(skip);
  const auto last = limit == 0 || skip + limit >= steps.size() ? steps.end() : first + static_cast<std::ptrdiff_t>(limit);
  return {first, last};
}

}  // namespace redline::profile
