#include "harness/measure/saturation.hpp"

#include <algorithm>
#include <cmath>

namespace redline {
namespace {

// Throughput at `size` from a series sorted by size; empty past its end.
std::optional<double> throughput_at(const std::vector<ThroughputPoint>& sorted, double size) {
  auto above = std::lower_bound(sorted.begin(), sorted.end(), size,
                                [](const ThroughputPoint& p, double s) { return p.size < s; });
  if (above == sorted.end()) return std::nullopt;
  if (above->size == size || above == sorted.begin()) return above->throughput;
  const auto below = std::prev(above);
  const double t = (size - below->size) / (above->size - below->size);
  return below->throughput + t * (above->throughput - below->throughput);
}

}  // namespace

Saturation analyze_saturation(std::vector<ThroughputPoint> points, const SaturationOptions& options) {
  Saturation s;
  // Unusable readings (NaN, infinite) cannot saturate anything.
  std::erase_if(points, [](const ThroughputPoint& p) { return !std::isfinite(p.throughput); });
  if (points.empty()) return s;
  std::stable_sort(points.begin(), points.end(),
                   [](const ThroughputPoint& a, const ThroughputPoint& b) { return a.size < b.size; });

  s.best = *std::max_element(points.begin(), points.end(), [](const auto& a, const auto& b) {
    return a.throughput < b.throughput;
  });
  s.largest = points.back();
  if (!(s.best->throughput > 0)) return s;

  const double target = options.fraction_of_best * s.best->throughput;
  for (const auto& p : points)
    if (p.throughput >= target) {
      s.fraction = p;
      break;
    }

  for (const auto& p : points) {
    const auto doubled = throughput_at(points, 2 * p.size);
    if (!doubled) break;  // every later size's double is past the end too
    if (*doubled < p.throughput * (1.0 + options.plateau_gain)) {
      s.plateau = p;
      break;
    }
  }
  return s;
}

}  // namespace redline
