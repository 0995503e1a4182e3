// Saturation analysis on series whose plateau, fraction point, saturation
// point and best point are known by construction: clean knees, and the noisy
// shapes that fooled the old "first doubling under 5%" rule (a dip, a spike, a
// flat stretch before the rise, a fast first trial).
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

TEST(Saturation, CleanKnee) {
  // 4->8 gains 95%, then 8->16 +2.6% and 8->32 +3.2%: nothing past 8 gains 5%.
  const Series s = {{1, 100}, {2, 200}, {4, 400}, {8, 780}, {16, 800}, {32, 805}};
  const Saturation sat = analyze_saturation(s);
  EXPECT_EQ(sat.verdict, PlateauVerdict::placed);
  expect_point(sat.plateau, 8, 780, "plateau");
  expect_point(sat.point, 8, 780, "point");
  expect_point(sat.fraction, 8, 780, "fraction");  // 780 >= 0.9 * 805; 400 is not
  expect_point(sat.best, 32, 805, "best");
  expect_point(sat.largest, 32, 805, "largest");
  EXPECT_FALSE(sat.spread.has_value());  // one reading per size: no spread to tell
}

TEST(Saturation, ADipIsNotAPlateau) {
  // 4 reads low (150): doubling 2 -> 4 "loses", which the old rule took for
  // saturation at 2. 8 and 16 gain far more than 5% over 2, so 2 is no plateau.
  const Series s = {{1, 100}, {2, 190}, {4, 150}, {8, 700}, {16, 760}, {32, 770}};
  const Saturation sat = analyze_saturation(s);
  expect_point(sat.plateau, 16, 760, "plateau");  // 8 -> 16 still gains 8.6%
  expect_point(sat.point, 16, 760, "point");
}

TEST(Saturation, ASpikeBeforeTheKneeIsNotAPlateau) {
  // 2 spikes to 400, so 2 -> 4 (380) loses: the old rule said 2. 8 (+75%)
  // counts against it.
  const Series s = {{1, 100}, {2, 400}, {4, 380}, {8, 700}, {16, 780}, {32, 790}};
  const Saturation sat = analyze_saturation(s);
  expect_point(sat.plateau, 16, 780, "plateau");
  expect_point(sat.fraction, 16, 780, "fraction");  // 0.9 * 790 = 711: 8's 700 falls short
}

TEST(Saturation, AFastFirstTrialIsNotAPlateau) {
  // The issue's `-- true`: the first trial took 1 ms, later ones 21 ms, so
  // batch 1 reads 1000 samples/s and batch 2 95. Batch 64 beats them all.
  Series s = {{1, 1000}};
  for (double b = 2; b <= 64; b *= 2) s.push_back({b, b / 0.021});
  const Saturation sat = analyze_saturation(s);
  EXPECT_EQ(sat.verdict, PlateauVerdict::not_reached);  // wall time keeps scaling with the batch
  EXPECT_FALSE(sat.point.has_value());
  expect_point(sat.best, 64, 64 / 0.021, "best");
}

TEST(Saturation, AFlatStretchThenARise) {
  // 1..4 flat, then the rise: the old rule stopped at 1.
  const Series s = {{1, 100}, {2, 102}, {4, 104}, {8, 300}, {16, 600}, {32, 620}, {64, 625}};
  const Saturation sat = analyze_saturation(s);
  expect_point(sat.plateau, 16, 600, "plateau");
  expect_point(sat.point, 16, 600, "point");
}

TEST(Saturation, ALaterRiseMovesThePlateau) {
  // Flat from 4 to 16, then a second rise at 64 (+20% over 4).
  const Series s = {{1, 100}, {2, 200}, {4, 400}, {8, 405}, {16, 410}, {32, 415}, {64, 480}, {128, 485}};
  expect_point(analyze_saturation(s).plateau, 64, 480, "plateau");
}

TEST(Saturation, GainJustAboveThePlateauGainIsNotAPlateau) {
  // 2->4 gains 6%: still paying. Nothing past 4 gains 5% over it: 4, not 2.
  const Series s = {{1, 100}, {2, 200}, {4, 212}, {8, 216}};
  expect_point(analyze_saturation(s).plateau, 4, 212, "plateau");
  // Exactly 5% is not more than 5%: 2 holds when 4 and 8 gain 5% at most.
  expect_point(analyze_saturation({{1, 100}, {2, 200}, {4, 210}, {8, 210}}).plateau, 2, 200, "plateau at 5%");
}

TEST(Saturation, PlateauGainIsConfigurable) {
  const Series s = {{1, 100}, {2, 190}, {4, 360}, {8, 370}, {16, 372}};
  SaturationOptions options;
  options.plateau_gain = 0.95;  // 2 -> 16 gains 95.8%: 2 does not hold; 4 does
  expect_point(analyze_saturation(s, options).plateau, 4, 360, "plateau at 95%");
  options.plateau_gain = 0.01;  // 4 -> 16 gains 3.3%: only 8 (16: +0.5%) holds
  expect_point(analyze_saturation(s, options).plateau, 8, 370, "plateau at 1%");
}

TEST(Saturation, PointIsNeverBelowTheFractionPoint) {
  // With --fraction 99 the plateau (4: nothing past it gains 5%) is below the
  // first size at 99% of the best (16).
  const Series s = {{1, 100}, {2, 200}, {4, 400}, {8, 405}, {16, 412}, {32, 415}};
  SaturationOptions options;
  options.fraction_of_best = 0.99;
  const Saturation sat = analyze_saturation(s, options);
  expect_point(sat.plateau, 4, 400, "plateau");
  expect_point(sat.fraction, 16, 412, "fraction");
  expect_point(sat.point, 16, 412, "point");
}

TEST(Saturation, StillRisingHasNoPlateau) {
  const Series s = {{1, 100}, {2, 200}, {4, 400}, {8, 800}, {16, 1600}};
  const Saturation sat = analyze_saturation(s);
  EXPECT_EQ(sat.verdict, PlateauVerdict::not_reached);
  EXPECT_FALSE(sat.plateau.has_value());
  EXPECT_FALSE(sat.point.has_value());
  expect_point(sat.best, 16, 1600, "best");
  expect_point(sat.fraction, 16, 1600, "fraction");
  EXPECT_FALSE(sat.flat_unjudged.has_value());
  EXPECT_EQ(plateau_reason(sat, {}, "batch"), "a larger batch still gains more than 5% at the end of the sweep");
}

TEST(Saturation, SizesWhoseDoubleIsPastTheEndAreNotJudged) {
  // 8 -> 12 is flat, but the sweep never reached 16: 8 is not judged.
  const Series s = {{1, 100}, {2, 200}, {4, 400}, {8, 800}, {12, 801}};
  const Saturation short_sweep = analyze_saturation(s);
  EXPECT_FALSE(short_sweep.plateau.has_value());
  // Not "still gains": flat from 8 on, the sweep just ended before 16.
  expect_point(short_sweep.flat_unjudged, 8, 800, "flat_unjudged");
  EXPECT_EQ(plateau_reason(short_sweep, {}, "batch"),
            "too short a sweep to judge: no larger batch gains more than 5% from 8 on, but a plateau counts once the "
            "sweep reaches twice its batch and it ended at 12");
  // Closely spaced sizes (a bisection) still count against a smaller one.
  const Series bisected = {{1, 100}, {2, 200}, {4, 400}, {8, 402}, {12, 403}, {14, 470}};
  const Saturation rising = analyze_saturation(bisected);
  EXPECT_FALSE(rising.plateau.has_value());  // 14 gains 17% over 4 and 8
  EXPECT_FALSE(rising.flat_unjudged.has_value());  // and so it is still rising at the end
}

TEST(Saturation, FallingThroughputIsAPlateau) {
  const Series s = {{1, 100}, {2, 90}, {4, 80}};
  const Saturation sat = analyze_saturation(s);
  expect_point(sat.plateau, 1, 100, "plateau");
  expect_point(sat.best, 1, 100, "best");
}

TEST(Saturation, RepeatsAreReadAsMediansWithTheirSpread) {
  // Three readings per size; one wild reading at 2 (a spike) and one at 8
  // (a dip) move no median. Medians: 100, 200, 400, 402, 404.
  const Series s = {{1, 99},  {1, 100}, {1, 101}, {2, 200}, {2, 199}, {2, 900}, {4, 400}, {4, 401},
                    {4, 398}, {8, 402}, {8, 150}, {8, 403}, {16, 404}, {16, 405}, {16, 403}};
  const Saturation sat = analyze_saturation(s);
  expect_point(sat.plateau, 4, 400, "plateau");
  expect_point(sat.best, 16, 404, "best");
  ASSERT_EQ(sat.medians.size(), 5u);
  EXPECT_DOUBLE_EQ(sat.medians[1].throughput, 200);
  // Spread per size (max - min) / median: 2%, 350.5%, 0.75%, 63.2%, 0.5%; median 2%.
  ASSERT_TRUE(sat.spread.has_value());
  EXPECT_NEAR(*sat.spread, 0.02, 1e-12);
  ASSERT_TRUE(sat.widest.has_value());
  EXPECT_DOUBLE_EQ(sat.widest->size, 2);
  EXPECT_NEAR(sat.widest->spread, 701.0 / 200, 1e-12);
  EXPECT_EQ(sat.verdict, PlateauVerdict::placed);
}

TEST(Saturation, SpreadAboveThePlateauGainPlacesNoPlateau) {
  // Every size's repeats spread by 10% (> 5%): a 5% plateau cannot be told
  // from the noise. The fraction point still stands.
  Series s;
  for (double b : {1.0, 2.0, 4.0, 8.0, 16.0}) {
    const double level = 100 * std::min(b, 4.0);
    for (double f : {0.95, 1.0, 1.05}) s.push_back({b, level * f});
  }
  const Saturation sat = analyze_saturation(s);
  EXPECT_EQ(sat.verdict, PlateauVerdict::too_noisy);
  EXPECT_FALSE(sat.plateau.has_value());
  EXPECT_FALSE(sat.point.has_value());
  ASSERT_TRUE(sat.spread.has_value());
  EXPECT_NEAR(*sat.spread, 0.10, 1e-12);
  expect_point(sat.fraction, 4, 400, "fraction");
  // A plateau gain above the noise places it again.
  SaturationOptions wide;
  wide.plateau_gain = 0.12;
  expect_point(analyze_saturation(s, wide).plateau, 4, 400, "plateau at 12%");
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
  expect_point(sat.plateau, 4, 360, "plateau");
  EXPECT_EQ(sat.medians.size(), 4u);
}

TEST(Saturation, EmptyAndAllNaNSeries) {
  for (const Series& s : {Series{}, Series{{1, std::nan("")}, {2, std::nan("")}}}) {
    const Saturation sat = analyze_saturation(s);
    EXPECT_FALSE(sat.best.has_value());
    EXPECT_FALSE(sat.plateau.has_value());
    EXPECT_FALSE(sat.fraction.has_value());
    EXPECT_FALSE(sat.point.has_value());
    EXPECT_FALSE(sat.largest.has_value());
    EXPECT_EQ(sat.verdict, PlateauVerdict::no_throughput);
  }
}

TEST(Saturation, AllZeroSeriesHasNoSaturationPoints) {
  // One rank's all_reduce: busbw 0 at every size.
  const Saturation s = analyze_saturation({{1, 0}, {2, 0}, {4, 0}, {8, 0}});
  ASSERT_TRUE(s.best && s.largest);
  EXPECT_DOUBLE_EQ(s.best->throughput, 0);
  EXPECT_FALSE(s.fraction);
  EXPECT_FALSE(s.plateau);
  EXPECT_FALSE(s.point);
  EXPECT_EQ(s.verdict, PlateauVerdict::no_throughput);
}

TEST(Saturation, SinglePoint) {
  const Saturation sat = analyze_saturation({{32, 1000}});
  expect_point(sat.best, 32, 1000, "best");
  expect_point(sat.fraction, 32, 1000, "fraction");
  expect_point(sat.largest, 32, 1000, "largest");
  EXPECT_FALSE(sat.plateau.has_value());
  EXPECT_EQ(sat.verdict, PlateauVerdict::not_reached);
  expect_point(sat.flat_unjudged, 32, 1000, "flat_unjudged");  // one size: too short to judge, not rising
}

}  // namespace
}  // namespace redline
