#include "harness/measure/size_curve.hpp"

#include <algorithm>
#include <cmath>

namespace redline {

std::optional<SizeReading> read_at_size(const std::vector<SizePoint>& points, double size) {
  if (points.empty() || size < points.front().size || size > points.back().size) return std::nullopt;
  const auto hi = std::lower_bound(points.begin(), points.end(), size,
                                   [](const SizePoint& p, double s) { return p.size < s; });
  const auto above = static_cast<std::size_t>(hi - points.begin());
  if (hi->size == size) return SizeReading{hi->value, above, above};
  const auto lo = hi - 1;
  const double t = std::log2(size / lo->size) / std::log2(hi->size / lo->size);
  return SizeReading{lo->value + t * (hi->value - lo->value), above - 1, above};
}

}  // namespace redline
