// Saturation analysis on series whose plateau, fraction point and best point
// are known by construction.
#include "harness/measure/saturation.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace redline {
namespace {

using Series = std::vector<ThroughputPoint>;

void expect_point(const std::optional<ThroughputPoint>& p, double size, double throughput, const char* what) {
  ASSERT_TRUE(p.has_value()) << what << " is empty";
  EXPECT_DOUBLE_EQ(p->size, size) << what;
  EXPECT_DOUBLE_EQ(p->throughput, throughput) << what;
}

TEST(Saturation, PlateauAtTheFirstDoublingThatGainsLessThanFivePercent) {
  // 1->2: +90%, 2->4: +89%, 4->8: +2.8% (< 5%): the plateau is 4.
  const Series s = {{1, 100}, {2, 190}, {4, 360}, {8, 370}, {16, 372}};
  const Saturation sat = analyze_saturation(s);
  expect_point(sat.plateau, 4, 360, "plateau");
  expect_point(sat.best, 16, 372, "best");
  expect_point(sat.largest, 16, 372, "largest");
  expect_point(sat.fraction, 4, 360, "fraction");  // 360 >= 0.9 * 372 = 334.8; 190 is not
}

TEST(Saturation, GainJustAboveFivePercentIsNotAPlateau) {
  // 2->4 gains 6%: still paying. 4->8 gains 1.9%: the plateau is 4, not 2.
  const Series s = {{1, 100}, {2, 200}, {4, 212}, {8, 216}};
  expect_point(analyze_saturation(s).plateau, 4, 212, "plateau");
}

TEST(Saturation, PlateauGainIsConfigurable) {
  const Series s = {{1, 100}, {2, 190}, {4, 360}, {8, 370}, {16, 372}};
  SaturationOptions options;
  options.plateau_gain = 0.95;  // 1->2 gains 90% < 95%
  expect_point(analyze_saturation(s, options).plateau, 1, 100, "plateau");
  options.plateau_gain = 0.01;  // only 8->16 (+0.5%) is flat enough
  expect_point(analyze_saturation(s, options).plateau, 8, 370, "plateau");
}

TEST(Saturation, InterpolatesWhenTheDoubleWasNotMeasured) {
  // 2 x 10 = 20 lies between 15 (101) and 30 (110): 101 + (5/15) * 9 = 104,
  // a 4% gain: plateau at 10. Reading the measured point above (30: +10%)
  // would miss it; the next test catches reading the one below instead.
  const Series s = {{10, 100}, {15, 101}, {30, 110}};
  expect_point(analyze_saturation(s).plateau, 10, 100, "plateau");
}

TEST(Saturation, InterpolatedGainAboveThresholdIsNotAPlateau) {
  // 20 lies between 15 (103) and 30 (200): 103 + (5/15) * 97 = 135.3, +35%.
  // The nearest measured point below (15: +3%) would wrongly say plateau.
  const Series s = {{10, 100}, {15, 103}, {30, 200}};
  EXPECT_FALSE(analyze_saturation(s).plateau.has_value());
}

TEST(Saturation, StillRisingHasNoPlateau) {
  const Series s = {{1, 100}, {2, 200}, {4, 400}, {8, 800}, {16, 1600}};
  const Saturation sat = analyze_saturation(s);
  EXPECT_FALSE(sat.plateau.has_value());
  expect_point(sat.best, 16, 1600, "best");
  expect_point(sat.fraction, 16, 1600, "fraction");
  expect_point(sat.largest, 16, 1600, "largest");
}

TEST(Saturation, SizesWhoseDoubleIsPastTheEndAreNotJudged) {
  // 8 -> 16 is not measured (the series ends at 12): a flat 8..12 says nothing.
  const Series s = {{1, 100}, {2, 200}, {4, 400}, {8, 800}, {12, 801}};
  EXPECT_FALSE(analyze_saturation(s).plateau.has_value());
}

TEST(Saturation, FractionOfBest) {
  const Series s = {{1, 50}, {2, 80}, {4, 91}, {8, 100}, {16, 99}};
  const Saturation sat = analyze_saturation(s);
  expect_point(sat.fraction, 4, 91, "fraction");  // first >= 90
  expect_point(sat.best, 8, 100, "best");
  expect_point(sat.largest, 16, 99, "largest");
  SaturationOptions options;
  options.fraction_of_best = 0.5;
  expect_point(analyze_saturation(s, options).fraction, 1, 50, "fraction at 50%");
  options.fraction_of_best = 0.79;
  expect_point(analyze_saturation(s, options).fraction, 2, 80, "fraction at 79%");
}

TEST(Saturation, UnsortedInputIsSortedBySize) {
  const Series s = {{16, 372}, {2, 190}, {8, 370}, {1, 100}, {4, 360}};
  const Saturation sat = analyze_saturation(s);
  expect_point(sat.plateau, 4, 360, "plateau");
  expect_point(sat.largest, 16, 372, "largest");
  expect_point(sat.fraction, 4, 360, "fraction");
}

TEST(Saturation, NaNAndInfiniteReadingsAreIgnored) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const Series s = {{1, 100}, {2, nan}, {4, 360}, {8, 370}, {16, 372}, {32, inf}, {64, nan}};
  const Saturation sat = analyze_saturation(s);
  expect_point(sat.best, 16, 372, "best");
  expect_point(sat.largest, 16, 372, "largest");
  // 1 -> 2 is interpolated between 1 (100) and 4 (360): 186.7, not NaN.
  expect_point(sat.plateau, 4, 360, "plateau");
}

TEST(Saturation, EmptyAndAllNaNSeries) {
  for (const Series& s : {Series{}, Series{{1, std::nan("")}, {2, std::nan("")}}}) {
    const Saturation sat = analyze_saturation(s);
    EXPECT_FALSE(sat.best.has_value());
    EXPECT_FALSE(sat.plateau.has_value());
    EXPECT_FALSE(sat.fraction.has_value());
    EXPECT_FALSE(sat.largest.has_value());
  }
}

TEST(Saturation, AllZeroSeriesHasNoSaturationPoints) {
  // One rank's all_reduce: busbw 0 at every size.
  const Saturation s = analyze_saturation({{1, 0}, {2, 0}, {4, 0}, {8, 0}});
  ASSERT_TRUE(s.best && s.largest);
  EXPECT_DOUBLE_EQ(s.best->throughput, 0);
  EXPECT_FALSE(s.fraction);
  EXPECT_FALSE(s.plateau);
}

TEST(Saturation, SinglePoint) {
  const Saturation sat = analyze_saturation({{32, 1000}});
  expect_point(sat.best, 32, 1000, "best");
  expect_point(sat.fraction, 32, 1000, "fraction");
  expect_point(sat.largest, 32, 1000, "largest");
  EXPECT_FALSE(sat.plateau.has_value());
}

TEST(Saturation, FallingThroughputIsAPlateau) {
  const Series s = {{1, 100}, {2, 90}, {4, 80}};
  const Saturation sat = analyze_saturation(s);
  expect_point(sat.plateau, 1, 100, "plateau");
  expect_point(sat.best, 1, 100, "best");
}

}  // namespace
}  // namespace redline
