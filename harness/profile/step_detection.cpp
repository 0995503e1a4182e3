#include "harness/profile/step_detection.hpp"

#include <algorithm>
#include <limits>
#include <map>

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

// How much of the sequence's second half repeats at period p (name i equals
// name i + p); nullopt once more than 5% has failed, so the many periods
// that repeat nothing cost a few comparisons each.
std::optional<double> repeat_share(const std::vector<int>& names, std::size_t p) {
  const std::size_t n = names.size();
  const std::size_t from = n / 2 >= p ? n / 2 - p : 0;
  const std::size_t compared = n - p - from;
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
std::optional<std::size_t> repeating_period(const std::vector<int>& names) {
  std::optional<std::size_t> best;
  double best_share = 0;
  for (std::size_t p = 1; p * 3 <= names.size(); ++p)
    if (const auto share = repeat_share(names, p); share && *share > best_share + 1e-12) best = p, best_share = *share;
  return best;
}

// Where in the period steps start: the phase with the longest mean idle gap
// before its kernel.
std::size_t step_phase(const std::vector<const Activity*>& kernels, std::size_t period) {
  std::vector<double> gap(period, 0);
  std::vector<int> count(period, 0);
  std::int64_t busy_until = kernels.front()->end_ns;
  for (std::size_t i = 1; i < kernels.size(); ++i) {
    gap[i % period] += static_cast<double>(std::max<std::int64_t>(0, kernels[i]->start_ns - busy_until));
    ++count[i % period];
    busy_until = std::max(busy_until, kernels[i]->end_ns);
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
  for (const Activity& a : trace.activities)
    if (a.kind == ActivityKind::range && std::regex_search(a.name, pattern)) matching.push_back({a.start_ns, a.end_ns});
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
  const std::size_t phase = step_phase(kernels, *period);
  for (std::size_t first = phase; first < kernels.size(); first += *period) {
    const std::size_t next = first + *period;
    const std::int64_t end = next < kernels.size() ? kernels[next]->start_ns : last_gpu_end(trace);
    steps.push_back({kernels[first]->start_ns, end});
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
