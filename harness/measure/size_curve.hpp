// A figure measured at a few sizes (bus bandwidth by message size) read at a
// size between them: linear in log2(size) between the two measured sizes
// around it, exact at a measured one. Outside the measured sizes there is no
// reading: a bandwidth curve bends at both ends (latency below, links
// above), so extrapolating would invent a figure.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "harness/measure/saturation.hpp"

namespace redline {

struct SizeReading {
  double value = 0;
  std::size_t below = 0, above = 0;  // the points it was read between (equal at a measured size)
};

// `points` sorted by size, ascending; the reading is of their throughput.
std::optional<SizeReading> read_at_size(const std::vector<ThroughputPoint>& points, double size);

}  // namespace redline
