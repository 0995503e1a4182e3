// Time covered by sets of intervals: concurrent kernels on several streams
// overlap, so the GPU's busy time is the length of their union, not the sum
// of their durations.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace redline::profile {

using Interval = std::pair<std::int64_t, std::int64_t>;  // [start, end) in ns

// Sorted, overlapping and touching intervals merged, empty ones dropped.
std::vector<Interval> merged(std::vector<Interval> intervals);
std::int64_t covered(const std::vector<Interval>& merged_intervals);
// The time two merged sets share.
std::int64_t shared(const std::vector<Interval>& a, const std::vector<Interval>& b);
// `i` cut to [from, to); empty (start == end) when outside.
Interval clipped(Interval i, std::int64_t from, std::int64_t to);

}  // namespace redline::profile
