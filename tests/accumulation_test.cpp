// Gradient accumulation plans: GBS = MBS x GA x DP, and what happens when it
// does not divide.
#include "harness/batch/accumulation.hpp"

#include <gtest/gtest.h>

#include <string>

#include "harness/core/usage_error.hpp"
#include "tests/support.hpp"

namespace redline {
namespace {

TEST(Accumulation, ExactPlan) {
  const AccumulationPlan p = plan_accumulation(512, 8, 16);
  EXPECT_EQ(p.micro_batch, 16);
  EXPECT_EQ(p.data_parallel, 8);
  EXPECT_EQ(p.global_batch, 512);
  EXPECT_EQ(p.accumulation_steps, 4);
  EXPECT_EQ(p.effective_global_batch, 512);
  EXPECT_TRUE(p.exact);
  EXPECT_FALSE(p.exact_micro_batch.has_value());
  EXPECT_EQ(p.explanation, "GBS 512 = MBS 16 x GA 4 x DP 8");
}

TEST(Accumulation, ExactWithOneStep) {
  const AccumulationPlan p = plan_accumulation(64, 4, 16);
  EXPECT_EQ(p.accumulation_steps, 1);
  EXPECT_TRUE(p.exact);
  EXPECT_EQ(p.explanation, "GBS 64 = MBS 16 x GA 1 x DP 4");
}

TEST(Accumulation, InexactRoundsToTheNearestGlobalBatchAndOffersAnExactMicroBatch) {
  // 512 / (24 x 8) = 2.67 -> 3 steps -> 576 (+12.5%). Per rank 64 = 16 x 4.
  const AccumulationPlan p = plan_accumulation(512, 8, 24);
  EXPECT_FALSE(p.exact);
  EXPECT_EQ(p.accumulation_steps, 3);
  EXPECT_EQ(p.effective_global_batch, 576);
  ASSERT_TRUE(p.exact_micro_batch.has_value());
  EXPECT_EQ(*p.exact_micro_batch, 16);  // the largest <= 24 that divides 64
  EXPECT_CONTAINS(p.explanation, "GBS 576");
  EXPECT_CONTAINS(p.explanation, "+12.5%");
  EXPECT_CONTAINS(p.explanation, "use MBS 16 x GA 4");
  EXPECT_CONTAINS(p.explanation, "MBS 24 x GA 3 x DP 8");
}

TEST(Accumulation, InexactRoundingDownShowsNegativeOffset) {
  // 1000 / (48 x 2) = 10.4 -> 10 steps -> 960 (-4.0%). Per rank 500: 25 x 20.
  const AccumulationPlan p = plan_accumulation(1000, 2, 48);
  EXPECT_FALSE(p.exact);
  EXPECT_EQ(p.accumulation_steps, 10);
  EXPECT_EQ(p.effective_global_batch, 960);
  EXPECT_EQ(p.exact_micro_batch, 25);
  EXPECT_CONTAINS(p.explanation, "(-4.0%)");
  EXPECT_CONTAINS(p.explanation, "use MBS 25 x GA 20");
}

TEST(Accumulation, MicroBatchLargerThanPerRankShareNeedsAtLeastOneStep) {
  // 64 / (16 x 8) = 0.5: at least one step, 128 (+100%); exactly 64 needs MBS 8.
  const AccumulationPlan p = plan_accumulation(64, 8, 16);
  EXPECT_EQ(p.accumulation_steps, 1);
  EXPECT_EQ(p.effective_global_batch, 128);
  EXPECT_FALSE(p.exact);
  EXPECT_EQ(p.exact_micro_batch, 8);
  EXPECT_CONTAINS(p.explanation, "use MBS 8 x GA 1");
}

TEST(Accumulation, GlobalBatchNotAMultipleOfDataParallel) {
  // 100 / (4 x 8) = 3.125 -> 3 steps -> 96; no micro-batch gives 100 on 8 ranks.
  const AccumulationPlan p = plan_accumulation(100, 8, 4);
  EXPECT_FALSE(p.exact);
  EXPECT_EQ(p.accumulation_steps, 3);
  EXPECT_EQ(p.effective_global_batch, 96);
  EXPECT_FALSE(p.exact_micro_batch.has_value());
  EXPECT_CONTAINS(p.explanation, "not a multiple of DP 8");
}

TEST(Accumulation, GlobalBatchBelowDataParallelIsAUsageError) {
  try {
    plan_accumulation(4, 8, 1);
    FAIL() << "GBS 4 on 8 ranks was accepted";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.flag(), "--global-batch");
    EXPECT_CONTAINS(what, "--global-batch");
    EXPECT_CONTAINS(what, "'4'");
    EXPECT_CONTAINS(what, "8");
  }
}

TEST(Accumulation, GlobalBatchEqualToDataParallelIsFine) {
  const AccumulationPlan p = plan_accumulation(8, 8, 1);
  EXPECT_TRUE(p.exact);
  EXPECT_EQ(p.accumulation_steps, 1);
}

}  // namespace
}  // namespace redline
