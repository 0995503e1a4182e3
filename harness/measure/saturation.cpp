#include "harness/measure/saturation.hpp"

#include <algorithm>
#include <cmath>

#include "harness/core/units.hpp"
#include "harness/measure/stats.hpp"

namespace redline {
namespace {

struct SizeReadings {
  double size = 0;
  std::vector<double> values;
};

// Readings grouped by size, sizes ascending; unusable readings (NaN,
// infinite) dropped.
std::vector<SizeReadings> group_by_size(std::vector<ThroughputPoint> readings) {
  std::erase_if(readings, [](const ThroughputPoint& p) { return !std::isfinite(p.throughput); });
  std::stable_sort(readings.begin(), readings.end(),
                   [](const ThroughputPoint& a, const ThroughputPoint& b) { return a.size < b.size; });
  std::vector<SizeReadings> sizes;
  for (const auto& p : readings) {
    if (sizes.empty() || sizes.back().size != p.size) sizes.push_back({p.size, {}});
    sizes.back().values.push_back(p.throughput);
  }
  return sizes;
}

// The spread of the repeats: per size with two readings or more, the range
// over the median; the sweep's is the median of those, so one unlucky size
// does not condemn the whole sweep.
void measure_spread(const std::vector<SizeReadings>& sizes, Saturation& s) {
  std::vector<double> spreads;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto& values = sizes[i].values;
    if (values.size() < 2 || !(s.medians[i].throughput > 0)) continue;
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    const double spread = (*hi - *lo) / s.medians[i].throughput;
    spreads.push_back(spread);
    if (!s.widest || spread > s.widest->spread) s.widest = RepeatSpread{sizes[i].size, spread};
  }
  if (!spreads.empty()) s.spread = summarize(spreads).median;
}

// The smallest size from which no larger size gains more than `gain` over
// it (the last size always qualifies: nothing is larger).
std::size_t first_flat(const std::vector<ThroughputPoint>& medians, double gain) {
  for (std::size_t i = 0;; ++i) {
    const ThroughputPoint& s = medians[i];
    const bool holds = std::all_of(medians.begin() + static_cast<std::ptrdiff_t>(i) + 1, medians.end(),
                                   [&](const ThroughputPoint& t) { return t.throughput <= s.throughput * (1 + gain); });
    if (holds) return i;
  }
}

}  // namespace

Saturation analyze_saturation(std::vector<ThroughputPoint> readings, const SaturationOptions& options) {
  Saturation s;
  const std::vector<SizeReadings> sizes = group_by_size(std::move(readings));
  if (sizes.empty()) return s;
  for (const auto& size : sizes) s.medians.push_back({size.size, summarize(size.values).median});
  measure_spread(sizes, s);

  s.best = *std::max_element(s.medians.begin(), s.medians.end(),
                             [](const auto& a, const auto& b) { return a.throughput < b.throughput; });
  s.largest = s.medians.back();
  if (!(s.best->throughput > 0)) return s;

  const double target = options.fraction_of_best * s.best->throughput;
  s.fraction = *std::find_if(s.medians.begin(), s.medians.end(),
                             [&](const ThroughputPoint& p) { return p.throughput >= target; });

  if (s.spread && *s.spread > options.plateau_gain) {
    s.verdict = PlateauVerdict::too_noisy;
    return s;
  }
  // The flat run is a plateau only when the sweep reached twice its start
  // (doubling is what the rule is about); a larger start is never judged
  // either, so there is then no plateau at all.
  const std::size_t flat = first_flat(s.medians, options.plateau_gain);
  if (s.largest->size < 2 * s.medians[flat].size) {
    s.verdict = PlateauVerdict::not_reached;
    // Flat to the end from an earlier size, or a single size: the sweep
    // stopped too soon to judge, which is not the same as still rising.
    if (flat + 1 < s.medians.size() || s.medians.size() == 1) s.flat_unjudged = s.medians[flat];
    return s;
  }
  s.plateau = s.medians[flat];
  s.verdict = PlateauVerdict::placed;
  s.point = s.fraction->size > s.plateau->size ? s.fraction : s.plateau;
  return s;
}

std::string percent_text(double fraction) {
  const double pct = 100 * fraction;
  return format_number(pct, std::abs(pct - std::round(pct)) < 0.05 ? 0 : 1) + "%";
}

std::string plateau_reason(const Saturation& s, const SaturationOptions& options, const std::string& size,
                           const std::function<std::string(double)>& size_text) {
  const auto value_text = [&](double v) { return size_text ? size_text(v) : format_number(v, 0); };
  const std::string gain = percent_text(options.plateau_gain);
  switch (s.verdict) {
    case PlateauVerdict::placed:
      return "no larger " + size + " gains more than " + gain;
    case PlateauVerdict::not_reached:
      if (s.flat_unjudged)
        return "too short a sweep to judge: no larger " + size + " gains more than " + gain + " from " +
               value_text(s.flat_unjudged->size) + " on, but a plateau counts once the sweep reaches twice its " +
               size + " and it ended at " + value_text(s.largest->size);
      return "a larger " + size + " still gains more than " + gain + " at the end of the sweep";
    case PlateauVerdict::too_noisy:
      return "too noisy to place a plateau: the repeats spread " + percent_text(*s.spread) + ", more than the " + gain +
             " plateau gain";
    case PlateauVerdict::no_throughput:
      break;
  }
  return "nothing measured above 0";
}

}  // namespace redline
