#include "harness/measure/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace redline {

double percentile_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = (p / 100.0) * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  // On a sample exactly, take it: 0 x (inf - x) would be NaN.
  if (rank == static_cast<double>(lo)) return sorted[lo];
  return sorted[lo] + (rank - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

Summary summarize(std::vector<double> samples) {
  Summary s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.count);
  s.median = percentile_sorted(samples, 50);
  s.p90 = percentile_sorted(samples, 90);
  s.p99 = percentile_sorted(samples, 99);
  if (s.count > 1) {
    double sq = 0;
    for (double x : samples) sq += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(s.count - 1));
  }
  s.cv = s.mean != 0 ? s.stddev / std::fabs(s.mean) : 0;
  return s;
}

}  // namespace redline
