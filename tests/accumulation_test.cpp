// Gradient accumulation plans: GBS = MBS x GA x DP with MBS at most the
// recommended batch and at most GBS / DP, GA whole, the fewest steps; the
// nearest achievable global batches when no whole plan gives the one asked,
// in at most one step more than the recommended batch needs to reach it.
#include "harness/measure/accumulation.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "harness/core/usage_error.hpp"
#include "tests/support.hpp"

namespace redline {
namespace {

void expect_plan(const std::optional<BatchPlan>& p, std::int64_t gbs, std::int64_t mbs, std::int64_t ga,
                 std::int64_t dp, const char* what) {
  ASSERT_TRUE(p.has_value()) << what << " is empty";
  EXPECT_EQ(p->global_batch, gbs) << what;
  EXPECT_EQ(p->micro_batch, mbs) << what;
  EXPECT_EQ(p->accumulation_steps, ga) << what;
  EXPECT_EQ(p->data_parallel, dp) << what;
  EXPECT_EQ(p->micro_batch * p->accumulation_steps * p->data_parallel, p->global_batch) << what;
}

TEST(Accumulation, ExactPlan) {
  const AccumulationPlan p = plan_accumulation(512, 8, 16);
  EXPECT_EQ(p.global_batch, 512);
  EXPECT_EQ(p.data_parallel, 8);
  EXPECT_EQ(p.max_micro_batch, 16);
  expect_plan(p.exact, 512, 16, 4, 8, "exact");
  EXPECT_FALSE(p.below || p.above);
  EXPECT_EQ(p.explanation, "GBS 512 = MBS 16 x GA 4 x DP 8");
}

TEST(Accumulation, MicroBatchIsAtMostTheShareOfOneRank) {
  // 64 on 4 ranks is 16 each: MBS 16 in one step, never the recommended 64.
  const AccumulationPlan p = plan_accumulation(64, 4, 64);
  expect_plan(p.exact, 64, 16, 1, 4, "exact");
  EXPECT_EQ(p.explanation, "GBS 64 = MBS 16 x GA 1 x DP 4");
}

TEST(Accumulation, NotAMultipleOfDataParallelGivesTheNearestBelowAndAbove) {
  // The case: GBS 100 on 3 ranks. 99 = 3 x 33 and 102 = 3 x 34,
  // each in one step with the recommended batch 4096 (was: MBS 4096, GBS 12288).
  const AccumulationPlan p = plan_accumulation(100, 3, 4096);
  EXPECT_FALSE(p.exact.has_value());
  expect_plan(p.below, 99, 33, 1, 3, "below");
  expect_plan(p.above, 102, 34, 1, 3, "above");
  EXPECT_EQ(p.explanation,
            "no whole plan gives GBS 100 (not a multiple of DP 3); nearest: GBS 99 = MBS 33 x GA 1 x DP 3 (-1.0%) "
            "or GBS 102 = MBS 34 x GA 1 x DP 3 (+2.0%)");
}

TEST(Accumulation, NearestPlansKeepTheMicroBatchCap) {
  // GBS 100 on 3 ranks with batch 8 recommended: 5 steps of up to 8 reach
  // 34 per rank, so the nearest take at most 6. 99 and 102 would take 11 and
  // 17 (33 = 3 x 11, 34 = 2 x 17); in 6 steps, 32 (8 x 4) and 35 (7 x 5).
  const AccumulationPlan p = plan_accumulation(100, 3, 8);
  expect_plan(p.below, 96, 8, 4, 3, "below");
  expect_plan(p.above, 105, 7, 5, 3, "above");
}

TEST(Accumulation, NearestPlansTakeAtMostOneStepMoreThanTheCapNeeds) {
  // The case: batch 16 recommended, GBS 100 on 3 ranks. 3 steps reach
  // 34 per rank; 102 (2 x 17) took GA 17. In at most 4 steps: 99 and 108.
  const AccumulationPlan p = plan_accumulation(100, 3, 16);
  expect_plan(p.below, 99, 11, 3, 3, "below");
  expect_plan(p.above, 108, 12, 3, 3, "above");
  EXPECT_EQ(p.explanation,
            "no whole plan gives GBS 100 (not a multiple of DP 3); nearest: GBS 99 = MBS 11 x GA 3 x DP 3 (-1.0%) "
            "or GBS 108 = MBS 12 x GA 3 x DP 3 (+8.0%)");
  // 1,000,000 on 3 ranks: 333,334 per rank is 2 x 166,667 (was GA 166,667);
  // 20,834 steps of up to 16 reach it, and 16 x 20,833 or 16 x 20,834 are as near.
  const AccumulationPlan big = plan_accumulation(1000000, 3, 16);
  expect_plan(big.below, 999984, 16, 20833, 3, "below");
  expect_plan(big.above, 1000032, 16, 20834, 3, "above");
}

// The nearest plans by brute force: every MBS up to the cap and GA up to the
// bound, the nearest global batch on each side of G.
std::pair<std::int64_t, std::int64_t> nearest_by_search(std::int64_t gbs, std::int64_t dp, std::int64_t cap) {
  const std::int64_t steps = (gbs / dp + 1 + cap - 1) / cap + kNearestExtraSteps;
  std::int64_t below = 0, above = 0;
  for (std::int64_t mbs = 1; mbs <= cap; ++mbs)
    for (std::int64_t ga = 1; ga <= steps; ++ga) {
      const std::int64_t g = mbs * ga * dp;
      if (g < gbs) below = std::max(below, g);
      if (g > gbs && (above == 0 || g < above)) above = g;
    }
  return {below, above};
}

TEST(Accumulation, ExactPlanInMoreStepsThanTheCapNeedsAlsoGivesTheNearestInFewer) {
  // 1000 on 8 ranks is 125 each: exactly 25 x 5. Micro-batches of 32 would
  // need only 4 steps: 31 x 4 (992) and 32 x 4 (1024) are the nearest.
  const AccumulationPlan p = plan_accumulation(1000, 8, 32);
  expect_plan(p.exact, 1000, 25, 5, 8, "exact");
  expect_plan(p.below, 992, 31, 4, 8, "below");
  expect_plan(p.above, 1024, 32, 4, 8, "above");
  EXPECT_EQ(p.explanation,
            "GBS 1000 = MBS 25 x GA 5 x DP 8; in 4 steps (MBS up to 32): GBS 992 = MBS 31 x GA 4 x DP 8 (-0.8%) or "
            "GBS 1024 = MBS 32 x GA 4 x DP 8 (+2.4%)");
}

TEST(Accumulation, APrimeShareStillHasAWholePlan) {
  // 97 per rank: only 1 x 97 is exact; 2 steps of up to 64 give 96 or 98.
  const AccumulationPlan p = plan_accumulation(97, 1, 64);
  expect_plan(p.exact, 97, 1, 97, 1, "exact");
  expect_plan(p.below, 96, 48, 2, 1, "below");
  expect_plan(p.above, 98, 49, 2, 1, "above");
}

TEST(Accumulation, LargestDivisorAboveTheSquareRoot) {
  // 96 per rank, cap 50: the divisors up to 50 are ..., 24, 32, 48: 48 x 2.
  expect_plan(plan_accumulation(96, 1, 50).exact, 96, 48, 2, 1, "exact");
  // cap 40: 32 x 3; the cap alone would need 3 steps too, so nothing else.
  const AccumulationPlan p = plan_accumulation(96, 1, 40);
  expect_plan(p.exact, 96, 32, 3, 1, "exact");
  EXPECT_FALSE(p.below || p.above);
}

TEST(Accumulation, EveryPlanIsWholeAndWithinTheCap) {
  for (std::int64_t gbs = 1; gbs <= 130; ++gbs)
    for (std::int64_t dp : {1, 2, 3, 8})
      for (std::int64_t cap : {1, 5, 16, 64}) {
        if (gbs < dp) continue;
        const AccumulationPlan p = plan_accumulation(gbs, dp, cap);
        SCOPED_TRACE(p.explanation);
        EXPECT_EQ(p.exact.has_value(), gbs % dp == 0);
        for (const auto& plan : {p.exact, p.below, p.above}) {
          if (!plan) continue;
          EXPECT_EQ(plan->micro_batch * plan->accumulation_steps * plan->data_parallel, plan->global_batch);
          EXPECT_LE(plan->micro_batch, cap);
          EXPECT_LE(plan->micro_batch, plan->global_batch / dp);
          EXPECT_GE(plan->micro_batch, 1);
        }
        if (p.below) EXPECT_LT(p.below->global_batch, gbs);
        if (p.above) EXPECT_GT(p.above->global_batch, gbs);
        if (!p.exact) {
          ASSERT_TRUE(p.below && p.above);
          // At most kNearestExtraSteps more than micro-batches of the cap need to reach G,
          // and the nearest such plans.
          const std::int64_t reach = (gbs / dp + 1 + cap - 1) / cap;
          EXPECT_LE(p.below->accumulation_steps, reach + kNearestExtraSteps);
          EXPECT_LE(p.above->accumulation_steps, reach + kNearestExtraSteps);
          const auto [below, above] = nearest_by_search(gbs, dp, cap);
          EXPECT_EQ(p.below->global_batch, below);
          EXPECT_EQ(p.above->global_batch, above);
        }
        // No exact plan takes fewer steps than it: a larger micro-batch dividing the share would.
        if (p.exact)
          for (std::int64_t m = p.exact->micro_batch + 1; m <= std::min(cap, gbs / dp); ++m)
            EXPECT_NE((gbs / dp) % m, 0) << "MBS " << m;
      }
}

TEST(Accumulation, AnyMicroBatchCapIsOneStepWhenItCoversTheShare) {
  // The cap is only a bound: the largest int64 must not overflow the step
  // count (it did: ceil(share / cap) became 0, then a division by it).
  const AccumulationPlan p = plan_accumulation(512, 8, std::numeric_limits<std::int64_t>::max());
  expect_plan(p.exact, 512, 64, 1, 8, "exact");
  EXPECT_FALSE(p.below || p.above);
}

TEST(Accumulation, AGlobalBatchAboveTheCapIsRefused) {
  // Past kMaxBatch the nearest plan above could overflow int64 (it printed
  // GBS -9223372036854775808) and the divisor search would take seconds.
  EXPECT_NO_THROW(plan_accumulation(kMaxBatch, 1, 4));
  EXPECT_THROW(plan_accumulation(kMaxBatch + 1, 1, 4), std::invalid_argument);
  EXPECT_THROW(plan_accumulation(9223372036854775800, 8, 4), std::invalid_argument);
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
  expect_plan(p.exact, 8, 1, 1, 8, "exact");
}

}  // namespace
}  // namespace redline
