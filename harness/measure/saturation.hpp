// Where more size stops buying throughput, for any (size, throughput) series:
// the one rule behind a batch sweep's saturation batch, a collective's or
// GEMM sweep's saturation size and the charts' markers.
//
// - A series may hold several readings of one size (repeats): each size is
//   read as the median of its readings, and the spread of the repeats (the
//   range, max - min, over the median) is measured per size.
// - plateau: the smallest size from which no larger measured size gains more
//   than `plateau_gain` (default 5%) over it. Every larger size counts, so a
//   noisy dip never passes for a plateau and a later rise moves it; a size is
//   judged only when the sweep reached twice that size (doubling is what the
//   rule is about), so a series still rising at its end has none.
// - too noisy: with repeats, when the sweep's spread (the median over sizes of
//   their spread) is larger than the plateau gain, no plateau is placed: a
//   gain smaller than the noise cannot be told from it.
// - fraction: the smallest size whose throughput reaches `fraction_of_best`
//   (default 90%) of the best median.
// - point (the saturation point): the plateau, raised to the fraction point
//   when that is larger; empty when no plateau is placed.
// A series whose best is 0 (nothing moved: a busbw factor of 0 at one rank)
// has neither a plateau nor a fraction point.
#pragma once

#include <functional>
#include <optional>
#include <string>
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

enum class PlateauVerdict {
  placed,        // plateau and point are set
  not_reached,   // no judged size holds: still rising at the end, or too short a sweep (flat_unjudged)
  too_noisy,     // the repeats' spread is larger than the plateau gain
  no_throughput  // nothing measured, or nothing above 0
};

struct RepeatSpread {
  double size = 0;
  double spread = 0;  // (max - min) / median of the size's readings
};

struct Saturation {
  std::optional<ThroughputPoint> best;
  std::optional<ThroughputPoint> plateau;
  std::optional<ThroughputPoint> fraction;  // empty for an empty series or a best of 0
  std::optional<ThroughputPoint> point;     // the saturation point
  std::optional<ThroughputPoint> largest;
  // not_reached because the sweep ended too soon: the size from which no
  // larger one gains more than the plateau gain, which the sweep did not
  // reach twice (or the only size measured). Empty when still rising.
  std::optional<ThroughputPoint> flat_unjudged;
  PlateauVerdict verdict = PlateauVerdict::no_throughput;
  // Without repeats (one reading per size) both are empty.
  std::optional<double> spread;        // the median over sizes of their spread
  std::optional<RepeatSpread> widest;  // the size whose repeats spread most
  std::vector<ThroughputPoint> medians;  // one per size, by size
};

Saturation analyze_saturation(std::vector<ThroughputPoint> readings, const SaturationOptions& options = {});

// Why the verdict is what it is, in the words every tool prints: "no larger
// batch gains more than 5%", "a larger batch still gains more than 5% at the
// end of the sweep", "too short a sweep to judge: ...", "too noisy to place
// a plateau: ...". `size` names the
// swept quantity (batch, size, M); `size_text` writes one of its values
// (default: a whole number).
std::string plateau_reason(const Saturation& s, const SaturationOptions& options, const std::string& size,
                           const std::function<std::string(double)>& size_text = {});

// 5%, 12.5%: a fraction as a percentage, whole ones without decimals.
std::string percent_text(double fraction);

}  // namespace redline
