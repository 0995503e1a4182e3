// Where more size stops buying throughput, for any (size, throughput) series.
//
// - plateau point: the first size s where doubling to 2s adds less than
//   `plateau_gain` (default 5%, DeepSpeed autotuning's rule). Throughput at 2s
//   is read from the series, interpolated linearly between neighbours when 2s
//   was not measured; sizes whose double lies past the series are not judged.
// - fraction point: the smallest size whose throughput reaches
//   `fraction_of_best` (default 90%) of the best measured.
// - largest feasible: the largest size measured ok.
// A series whose best is 0 (nothing moved: a busbw factor of 0 at one rank)
// has neither point: every size would "reach 90%" of nothing.
#pragma once

#include <optional>
#include <vector>

namespace redline {

struct ThroughputPoint {
  double size = 0;
  double throughput = 0;
};

struct SaturationOptions {
  double plateau_gain = 0.05;
  double fraction_of_best = 0.90;
};

struct Saturation {
  std::optional<ThroughputPoint> best;
  std::optional<ThroughputPoint> plateau;   // empty: still rising at the end of the sweep
  std::optional<ThroughputPoint> fraction;  // empty for an empty series or a best of 0
  std::optional<ThroughputPoint> largest;
};

Saturation analyze_saturation(std::vector<ThroughputPoint> points, const SaturationOptions& options = {});

}  // namespace redline
