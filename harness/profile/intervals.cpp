#include "harness/profile/intervals.hpp"

#include <algorithm>

namespace redline::profile {

std::vector<Interval> merged(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> out;
  for (const Interval& i : intervals) {
    if (i.second <= i.first) continue;
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

std::int64_t covered(const std::vector<Interval>& merged_intervals) {
  std::int64_t total = 0;
  for (const Interval& i : merged_intervals) total += i.second - i.first;
  return total;
}

std::int64_t shared(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::int64_t total = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t start = std::max(a[i].first, b[j].first), end = std::min(a[i].second, b[j].second);
    if (end > start) total += end - start;
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return total;
}

Interval clipped(Interval i, std::int64_t from, std::int64_t to) {
  const std::int64_t start = std::clamp(i.first, from, to), end = std::clamp(i.second, from, to);
  return {start, std::max(start, end)};
}

}  // namespace redline::profile
