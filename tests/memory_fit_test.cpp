// Peak memory against batch size: the straight-line fit and the largest
// batch it predicts from what an out-of-memory trial reached.
#include "harness/measure/memory_fit.hpp"

#include <gtest/gtest.h>

namespace redline {
namespace {

constexpr double kMiB = 1 << 20;

// 8 MiB fixed + 64 KiB per sample, as a trainer's peaks would read.
MemoryPoint ok(std::int64_t batch) { return {batch, 8 * kMiB + 65536.0 * static_cast<double>(batch), true}; }

TEST(MemoryFit, AStraightLineThroughTheLargestBatches) {
  // Below 32 an allocator's arena hides the growth: the fit leaves it out.
  std::vector<MemoryPoint> points = {{1, 12 * kMiB, true}, {2, 12 * kMiB, true}, {4, 12 * kMiB, true},
                                     ok(32), ok(64), ok(128), ok(256)};
  const auto fit = fit_memory(points);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->bytes_per_sample, 65536.0, 1e-6);
  EXPECT_NEAR(fit->fixed_bytes, 8 * kMiB, 1e-3);
  EXPECT_EQ(fit->first_batch, 32);
  EXPECT_EQ(fit->last_batch, 256);
  EXPECT_EQ(fit->batches, 4);
}

// A bisection's sizes crowd near the limit: the fit still reaches down to
// an eighth of the largest, where the slope shows.
TEST(MemoryFit, CrowdedBisectionSizesKeepTheirSpan) {
  std::vector<MemoryPoint> points = {{8, 30 * kMiB, true}, ok(64), ok(128), ok(256), ok(512), ok(770), ok(772),
                                     ok(773), ok(774)};
  points[5].bytes += 3000;  // a few pages of noise near the limit
  const auto fit = fit_memory(points);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(fit->first_batch, 128);
  EXPECT_EQ(fit->batches, 7);
  EXPECT_NEAR(fit->bytes_per_sample, 65536.0, 65536.0 * 0.001);
}

TEST(MemoryFit, RepeatsCountByTheirLargestPeak) {
  const auto fit = fit_memory({ok(64), {64, 1 * kMiB, true}, ok(128), {128, 2 * kMiB, true}});
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->bytes_per_sample, 65536.0, 1e-6);
}

TEST(MemoryFit, NoFitWithoutTwoBatchesOrGrowth) {
  EXPECT_FALSE(fit_memory({}).has_value());
  EXPECT_FALSE(fit_memory({ok(64), ok(64)}).has_value());
  EXPECT_FALSE(fit_memory({ok(64), {128, 0, false}}).has_value()) << "an OOM trial is not a fit";
  EXPECT_FALSE(fit_memory({{64, 9 * kMiB, true}, {128, 9 * kMiB, true}}).has_value()) << "flat";
  EXPECT_FALSE(fit_memory({{64, 9 * kMiB, true}, {128, 8 * kMiB, true}}).has_value()) << "shrinking";
  // A few pages of noise on 100 MiB is not memory per sample.
  EXPECT_FALSE(fit_memory({{64, 100 * kMiB, true}, {128, 100 * kMiB + 8192, true}}).has_value()) << "noise";
  EXPECT_TRUE(fit_memory({{64, 100 * kMiB, true}, {128, 102 * kMiB, true}}).has_value());
}

TEST(MemoryFit, PredictsTheBatchAtWhatTheOomTrialReached) {
  // The trial at 1024 failed after reaching memory for 774 samples and a bit.
  std::vector<MemoryPoint> points = {ok(64), ok(128), ok(256), ok(512)};
  points.push_back({1024, ok(774).bytes + 3000, false});
  EXPECT_EQ(predict_max_batch(points), 774);
  // The most any OOM trial reached counts.
  points.push_back({900, ok(800).bytes + 10, false});
  EXPECT_EQ(predict_max_batch(points), 800);
}

TEST(MemoryFit, NoPredictionFromAnOomTrialThatReachedNothing) {
  std::vector<MemoryPoint> points = {ok(64), ok(128)};
  EXPECT_FALSE(predict_max_batch(points).has_value()) << "no OOM trial";
  points.push_back({256, 5 * kMiB, false});  // died before even the fixed part
  EXPECT_FALSE(predict_max_batch(points).has_value());
  EXPECT_FALSE(predict_max_batch({ok(64), {128, 50 * kMiB, false}}).has_value()) << "no fit from one batch";
  // Beyond the fixed part but short of a batch that fit: it failed at one
  // large allocation, not at the limit (it would predict 100 with 512 known to fit).
  points = {ok(64), ok(128), ok(256), ok(512), {1024, ok(100).bytes, false}};
  EXPECT_FALSE(predict_max_batch(points).has_value());
  points.push_back({768, ok(600).bytes, false});
  EXPECT_EQ(predict_max_batch(points), 600);
}

}  // namespace
}  // namespace redline
