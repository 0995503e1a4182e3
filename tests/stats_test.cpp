// Summary statistics against values computed by hand (numpy's default
// linear-interpolation percentiles, sample standard deviation), and a
// size curve read between its measured sizes.
#include "harness/measure/stats.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "harness/measure/size_curve.hpp"

namespace redline {
namespace {

TEST(Summarize, OddCountUnsortedInput) {
  // sorted: 1 2 3 4 10; mean 4; squared deviations 9+4+1+0+36 = 50.
  const Summary s = summarize({4, 1, 3, 2, 10});
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.mean, 4);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.p90, 7.6);   // rank 3.6: 4 + 0.6 * (10 - 4)
  EXPECT_DOUBLE_EQ(s.p99, 9.76);  // rank 3.96: 4 + 0.96 * 6
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(50.0 / 4));
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(50.0 / 4) / 4);
}

TEST(Summarize, EvenCountMedianInterpolates) {
  // mean 5; squared deviations 9+1+1+1+0+0+4+16 = 32.
  const Summary s = summarize({9, 2, 4, 5, 4, 7, 4, 5});
  EXPECT_EQ(s.count, 8u);
  EXPECT_DOUBLE_EQ(s.min, 2);
  EXPECT_DOUBLE_EQ(s.max, 9);
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_DOUBLE_EQ(s.median, 4.5);  // rank 3.5 between 4 and 5
  EXPECT_DOUBLE_EQ(s.p90, 7.6);     // rank 6.3: 7 + 0.3 * 2
  EXPECT_DOUBLE_EQ(s.p99, 8.86);    // rank 6.93: 7 + 0.93 * 2
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(32.0 / 7));
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(32.0 / 7) / 5);
}

TEST(Summarize, SingleSample) {
  const Summary s = summarize({2.5});
  EXPECT_EQ(s.count, 1u);
  EXPECT_DOUBLE_EQ(s.min, 2.5);
  EXPECT_DOUBLE_EQ(s.max, 2.5);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.p90, 2.5);
  EXPECT_DOUBLE_EQ(s.p99, 2.5);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
  EXPECT_DOUBLE_EQ(s.cv, 0);
}

TEST(Summarize, EmptyGivesCountZero) {
  const Summary s = summarize({});
  EXPECT_EQ(s.count, 0u);
  EXPECT_DOUBLE_EQ(s.min, 0);
  EXPECT_DOUBLE_EQ(s.max, 0);
  EXPECT_DOUBLE_EQ(s.mean, 0);
  EXPECT_DOUBLE_EQ(s.median, 0);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
  EXPECT_DOUBLE_EQ(s.cv, 0);
}

TEST(Summarize, IdenticalSamplesHaveNoSpread) {
  const Summary s = summarize({7, 7, 7, 7});
  EXPECT_DOUBLE_EQ(s.stddev, 0);
  EXPECT_DOUBLE_EQ(s.cv, 0);
  EXPECT_DOUBLE_EQ(s.median, 7);
}

TEST(Summarize, CvUsesMagnitudeOfMeanAndZeroMeanGivesZero) {
  const Summary negative = summarize({-1, -3});
  EXPECT_DOUBLE_EQ(negative.mean, -2);
  EXPECT_DOUBLE_EQ(negative.stddev, std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(negative.cv, std::sqrt(2.0) / 2);  // positive: a spread, not a direction

  const Summary zero_mean = summarize({-1, 1});
  EXPECT_DOUBLE_EQ(zero_mean.mean, 0);
  EXPECT_DOUBLE_EQ(zero_mean.cv, 0);
}

TEST(PercentileSorted, EndpointsAndInterpolation) {
  const std::vector<double> sorted = {10, 20, 30, 40};
  EXPECT_DOUBLE_EQ(percentile_sorted(sorted, 0), 10);
  EXPECT_DOUBLE_EQ(percentile_sorted(sorted, 100), 40);
  EXPECT_DOUBLE_EQ(percentile_sorted(sorted, 50), 25);
  EXPECT_DOUBLE_EQ(percentile_sorted(sorted, 25), 17.5);  // rank 0.75
  EXPECT_DOUBLE_EQ(percentile_sorted({}, 50), 0);
  EXPECT_DOUBLE_EQ(percentile_sorted({5}, 99), 5);
}

// A percentile that lands on a sample is that sample, even beside an infinite
// one: interpolating would compute 0 x inf, NaN.
TEST(PercentileSorted, OnASampleBesideInfinityIsTheSample) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_DOUBLE_EQ(percentile_sorted({1, 2, inf}, 50), 2);
  EXPECT_DOUBLE_EQ(percentile_sorted({1, inf}, 0), 1);
}

}  // namespace
}  // namespace redline

// A curve measured at 1 MiB and 4 MiB read at 2 MiB is halfway in log2(size);
// outside the measured sizes there is no reading.
TEST(ReadAtSize, ExactBetweenAndNeverOutside) {
  const std::vector<redline::ThroughputPoint> curve = {{1 << 20, 100}, {1 << 22, 200}};
  const auto exact = redline::read_at_size(curve, 1 << 22);
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->value, 200);
  EXPECT_EQ(exact->below, 1u);
  EXPECT_EQ(exact->above, 1u);
  const auto between = redline::read_at_size(curve, 1 << 21);
  ASSERT_TRUE(between);
  EXPECT_DOUBLE_EQ(between->value, 150);
  EXPECT_EQ(between->below, 0u);
  EXPECT_EQ(between->above, 1u);
  EXPECT_FALSE(redline::read_at_size(curve, (1 << 20) - 1));
  EXPECT_FALSE(redline::read_at_size(curve, (1 << 22) + 1));
  EXPECT_FALSE(redline::read_at_size({}, 1));
}
