#include "harness/measure/size_curve.hpp"

#include <algorithm>
#include <cmath>

namespace redline {

std::optional<SizeReading> read_at_size(const std::vector<ThroughputPoint>& points, double size) {
  if (points.empty() || size < points.front().size || size > points.back().size) return std::nullopt;
  const auto hi = std::lower_bound(points.begin(), points.end(), size,
                                   [](const ThroughputPoint& p, double s) { return p.size < s; });
  const auto above = static_cast<std::size_t>(hi - points.begin());
  if (hi->size == size) return SizeReading{hi->throughput, above, above};
  const auto lo = hi - 1;
  const double t = std::log2(size / lo->size) / std::log2(hi->size / lo->size);
  return SizeReading{lo->throughput + t * (hi->throughput - lo->throughput), above - 1, above};
}

}  // namespace redline
