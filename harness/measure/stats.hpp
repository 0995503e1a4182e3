// Summary statistics of repeated timings or rates.
#pragma once

#include <cstddef>
#include <vector>

namespace redline {

struct Summary {
  std::size_t count = 0;
  double min = 0, max = 0, mean = 0, median = 0, p90 = 0, p99 = 0;
  double stddev = 0;  // sample standard deviation (n-1); 0 for one sample
  double cv = 0;      // stddev / mean: the relative spread the noise stop uses
};

// Percentiles use linear interpolation between closest ranks (numpy's
// default), so p50 equals the median. An empty input gives count 0. Samples
// must be finite (callers reject NaN before it reaches a summary).
Summary summarize(std::vector<double> samples);

// The p-th percentile (0..100) of already sorted samples.
double percentile_sorted(const std::vector<double>& sorted, double p);

}  // namespace redline
