// redline plan's arithmetic (harness/plan), on hand-computed cases: the
// issue's example, overlap and the last bucket, Young/Daly, the knobs,
// busbw interpolation, and reading other tools' CSVs by column.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "harness/core/usage_error.hpp"
#include "harness/plan/busbw_curve.hpp"
#include "harness/plan/knob_analysis.hpp"
#include "harness/plan/plan_report.hpp"
#include "harness/plan/projection.hpp"
#include "harness/plan/run_readers.hpp"
#include "tests/support.hpp"

using namespace redline;

namespace {

// The issue's example: step 1000 ms, MBS 4, DP 8, GBS 512, 1,024,000
// samples, 14e9 gradient bytes, busbw 100 GB/s, no overlap.
PlanInputs issue_example() {
  PlanInputs in;
  in.micro_batch = 4;
  in.data_parallel = 8;
  in.global_batch = 512;
  in.samples = {1024000, "--samples"};
  in.step_time_ms[4] = {1000, "--step-time-ms"};
  in.grad_bytes = {14e9, "--grad-bytes"};
  in.busbw_GBps = {100, "--busbw"};
  return in;
}

TEST(PlanProjection, TheIssuesExample) {
  const Projection p = project(issue_example());
  EXPECT_EQ(p.plan.micro_batch, 4);
  EXPECT_EQ(p.plan.accumulation_steps, 16);  // 512 / (4 x 8)
  EXPECT_EQ(p.plan.data_parallel, 8);
  EXPECT_DOUBLE_EQ(p.step.compute_s, 16.0);
  EXPECT_NEAR(p.step.allreduce_s, 0.245, 1e-12);  // 14e9 x 2 x 7/8 / 100e9
  EXPECT_NEAR(p.step.exposed_s, 0.245, 1e-12);    // no overlap: all of it
  EXPECT_NEAR(p.step.total_s, 16.245, 1e-12);
  EXPECT_EQ(p.optimizer_steps, 2000);  // 1,024,000 / 512
  EXPECT_NEAR(p.train_s, 32490, 1e-6);
  EXPECT_NEAR(p.train_s / 3600, 9.025, 1e-9);  // "9.03 h"
  EXPECT_FALSE(p.checkpoint);
  EXPECT_NEAR(p.total_s, 32490, 1e-6);
  EXPECT_NEAR(p.gpu_hours, 9.025 * 8, 1e-9);
}

TEST(PlanProjection, AStepCountPastTheBoundIsRefusedNotOverflowed) {
  // ceil(S / GBS) is cast to int64: 1e300 samples printed -9223372036854775808 steps.
  PlanInputs in = issue_example();
  in.samples.value = kMaxOptimizerSteps * 512;
  EXPECT_EQ(project(in).optimizer_steps, 1'000'000'000'000);
  in.samples.value = 1e300;
  EXPECT_THROW(project(in), std::invalid_argument);
}

TEST(PlanProjection, OverlapHidesUpToTheBackwardButNeverTheLastBucket) {
  PlanInputs in = issue_example();
  in.overlap = 0.3;  // window 0.3 x 2/3 x 1 s = 0.2 s
  Projection p = project(in);
  EXPECT_NEAR(p.step.exposed_s, 0.045, 1e-12);
  EXPECT_NEAR(p.step.hidden_s, 0.2, 1e-12);
  EXPECT_NEAR(p.step.total_s, 16.045, 1e-12);

  in.overlap = 1;  // window 0.667 s > 0.245 s: only the last 25 MiB bucket stays
  p = project(in);
  EXPECT_NEAR(p.step.last_bucket_s, 26214400 * 1.75 / 100e9, 1e-15);
  EXPECT_NEAR(p.step.exposed_s, 26214400 * 1.75 / 100e9, 1e-15);

  in.backward_share = 0.5;
  in.overlap = 0.4;  // window 0.2 s again
  EXPECT_NEAR(project(in).step.exposed_s, 0.045, 1e-12);
}

TEST(PlanProjection, OneRankHasNoAllReduce) {
  PlanInputs in = issue_example();
  in.data_parallel = 1;
  const Projection p = project(in);
  EXPECT_EQ(p.plan.accumulation_steps, 128);
  EXPECT_EQ(p.step.allreduce_s, 0);
  EXPECT_DOUBLE_EQ(p.step.total_s, 128.0);
}

TEST(PlanProjection, PartialLastStepAndTheFewestStepsPlan) {
  PlanInputs in = issue_example();
  in.samples.value = 1024001;  // one sample more needs one more optimizer step
  EXPECT_EQ(project(in).optimizer_steps, 2001);
  // MBS 12 does not divide the 64 samples per rank: the accumulation rule's
  // exact plan is MBS 8 x GA 8; its step time is scaled from MBS 12's.
  in.micro_batch = 12;
  in.step_time_ms = {{12, {1200, "--step-time-ms"}}};
  const Projection p = project(in);
  EXPECT_EQ(p.plan.micro_batch, 8);
  EXPECT_EQ(p.plan.accumulation_steps, 8);
  EXPECT_NEAR(p.step_time_ms.value, 800, 1e-9);
  EXPECT_CONTAINS(p.step_time_ms.source, "scaled from 1200.000 ms at MBS 12");
  EXPECT_CONTAINS(p.accumulation.explanation, "GBS 512 = MBS 8 x GA 8 x DP 8");
  // A measured step time at MBS 8 wins over the scaling.
  in.step_time_ms[8] = {900, "sweep.csv line 5"};
  EXPECT_NEAR(project(in).step_time_ms.value, 900, 1e-9);
}

// Young/Daly by hand: C 60 s, MTBF 24 h, restore 30 s.
//   interval sqrt(2 x 60 x 86400) = 3219.94 s; lost per failure 1609.97 + 30
//   overhead 60 / 3219.94 + 1639.97 / 86400 = 1.8634% + 1.8981% = 3.7615%
TEST(PlanProjection, YoungDalyCheckpointsOnTop) {
  PlanInputs in = issue_example();
  in.checkpoint = CheckpointCosts{{60, "--ckpt-stall"}, {30, "--restore"}, {86400, "--mtbf"}, {5, "a"}, {120, "b"}};
  const Projection p = project(in);
  ASSERT_TRUE(p.checkpoint);
  EXPECT_NEAR(p.checkpoint->interval_s, 3219.938, 1e-3);
  EXPECT_NEAR(p.checkpoint->lost_work_s, 1639.969, 1e-3);
  EXPECT_NEAR(p.checkpoint->overhead_pct, 3.7615, 1e-4);
  EXPECT_NEAR(p.total_s, 32490 * 1.037615, 0.1);

  // Async: interval max(sqrt(2 x 5 x 86400) = 929.52 s, persist 120 s).
  in.async_checkpoint = true;
  const Projection a = project(in);
  EXPECT_NEAR(a.checkpoint->interval_s, 929.516, 1e-3);
  EXPECT_NEAR(a.checkpoint->lost_work_s, 464.758 + 120 + 30, 1e-3);
  EXPECT_LT(a.total_s, p.total_s);

  // A save near the MTBF is outside Young/Daly's first order: the summary says so.
  in.async_checkpoint = false;
  in.checkpoint = CheckpointCosts{{20, "--ckpt-stall"}, {0, "--restore"}, {36, "--mtbf"}, {5, "a"}, {120, "b"}};
  const Projection near = project(in);
  std::string text;
  for (const auto& [key, value] : plan_summary(in, near, {})) text += key + ": " + value + "\n";
  EXPECT_CONTAINS(text, "(no progress: the overhead is 105%");
}

TEST(PlanKnobs, EachKnobIsTheSameProjectionWithOneThingMoved) {
  PlanInputs in = issue_example();
  in.checkpoint = CheckpointCosts{{60, "s"}, {30, "r"}, {86400, "m"}, {5, "a"}, {120, "b"}};
  in.step_time_ms[8] = {1800, "sweep.csv line 4"};
  const auto alts = knob_alternatives(in, {{8, "sweep.json recommended_batch"}, {200, "--expect-busbw"}});
  ASSERT_EQ(alts.size(), 4u);

  // DP 16: GA 8, all-reduce 14e9 x 2 x 15/16 / 100e9 = 0.2625 s, MTBF halved.
  ASSERT_TRUE(alts[0].projection) << alts[0].why_not;
  EXPECT_EQ(alts[0].projection->plan.accumulation_steps, 8);
  EXPECT_NEAR(alts[0].projection->step.total_s, 8.2625, 1e-12);
  EXPECT_NEAR(alts[0].projection->checkpoint->interval_s, std::sqrt(2.0 * 60 * 43200), 1e-9);
  EXPECT_NEAR(alts[0].projection->train_s, 2000 * 8.2625, 1e-6);

  // MBS 8 at its measured 1800 ms: GA 8, 14.4 s + 0.245 s.
  ASSERT_TRUE(alts[1].projection) << alts[1].why_not;
  EXPECT_EQ(alts[1].projection->plan.micro_batch, 8);
  EXPECT_NEAR(alts[1].projection->step.total_s, 14.645, 1e-12);

  // busbw 200 GB/s halves the all-reduce.
  ASSERT_TRUE(alts[2].projection);
  EXPECT_NEAR(alts[2].projection->step.allreduce_s, 0.1225, 1e-12);
  EXPECT_DOUBLE_EQ(alts[2].projection->busbw_GBps, 200);

  ASSERT_TRUE(alts[3].projection);
  EXPECT_NEAR(alts[3].projection->checkpoint->interval_s, 929.516, 1e-3);

  const TimeShares t = time_shares(project(in));
  EXPECT_EQ(t.dominant, "compute");
  EXPECT_NEAR(t.compute_pct + t.exposed_pct + t.checkpoint_pct, 100, 1e-9);
}

// Doubling DP at one GBS halves GA while it can; at GA 1 the micro-batch
// halves instead, and its step time is then scaled, which the knob says.
TEST(PlanKnobs, DoublingDpSaysWhatMovedAndMarksAScaledStep) {
  PlanInputs in = issue_example();
  auto alts = knob_alternatives(in, {});
  ASSERT_TRUE(alts[0].projection);
  EXPECT_EQ(alts[0].change, "DP 16 (2x) at the same GBS, GA 16 -> 8");
  EXPECT_FALSE(alts[0].projection->step_time_scaled);

  in.global_batch = 32;  // MBS 4 x GA 1 x DP 8: DP 16 leaves 2 a rank
  in.samples.value = 3200;
  alts = knob_alternatives(in, {});
  ASSERT_TRUE(alts[0].projection);
  EXPECT_EQ(alts[0].change, "DP 16 (2x) at the same GBS, MBS 4 -> 2");
  EXPECT_TRUE(alts[0].projection->step_time_scaled);
  EXPECT_NEAR(alts[0].projection->step_time_ms.value, 500, 1e-9);
  const Projection plan = project(in);
  EXPECT_FALSE(plan.step_time_scaled);
  std::string text;
  for (const auto& [key, value] : plan_summary(in, plan, alts)) text += key + ": " + value + "\n";
  EXPECT_CONTAINS(text, "knob dp_doubled: DP 16 (2x) at the same GBS, MBS 4 -> 2: GBS 32 = MBS 2 x GA 1 x DP 16, step ");
  EXPECT_CONTAINS(text, "(micro-step 500 ms scaled to MBS 2 at constant samples/s, a lower bound)");
  const auto rows = plan_rows(plan, alts);
  EXPECT_EQ(rows[0].note, "");
  EXPECT_EQ(rows[1].note, "DP 16 (2x) at the same GBS, MBS 4 -> 2; micro-step 500 ms scaled to MBS 2 at constant "
                          "samples/s, a lower bound");
}

TEST(PlanKnobs, KnobsThatCannotMoveSayWhy) {
  PlanInputs in = issue_example();
  in.global_batch = 8;  // DP 16 does not divide 8
  in.samples.value = 8000;
  const auto alts = knob_alternatives(in, {});
  EXPECT_FALSE(alts[0].projection);
  EXPECT_CONTAINS(alts[0].why_not, "GBS 8 is not a multiple of DP 16");
  EXPECT_CONTAINS(alts[1].why_not, "no recommended micro-batch");
  EXPECT_CONTAINS(alts[2].why_not, "--expect-busbw");
  EXPECT_CONTAINS(alts[3].why_not, "no checkpoint figures");
  const auto rows = plan_rows(project(in), alts);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[1].status, RowStatus::skipped);
}

TEST(PlanReport, SummaryShowsEachFormulaWithItsSource) {
  const PlanInputs in = issue_example();
  const Projection p = project(in);
  std::string text;
  for (const auto& [key, value] : plan_summary(in, p, knob_alternatives(in, {}))) text += key + ": " + value + "\n";
  EXPECT_CONTAINS(text, "plan: GBS 512 = MBS 4 x GA 16 x DP 8");
  EXPECT_CONTAINS(text, "all_reduce: 0.245 s = 14000000000 B x 2(8-1)/8 / 100.000 GB/s");
  EXPECT_CONTAINS(text, "compute: 16.000 s = GA 16 x 1000 ms");
  EXPECT_CONTAINS(text, "optimizer_step: 16.245 s");
  EXPECT_CONTAINS(text, "optimizer_steps: 2000 = ceil(1024000 samples / GBS 512)");
  EXPECT_CONTAINS(text, "train_time: 32490 s (9.025 h) = 2000 x 16.245 s, before checkpoints");
  EXPECT_CONTAINS(text, "total: 32490 s (9.025 h), 72.2 GPU-hours (DP 8 GPUs)");
  EXPECT_CONTAINS(text, "(--busbw)");
  EXPECT_CONTAINS(text, "(--step-time-ms)");
}

// A CSV in the all-reduce sweep's columns; figures chosen to compute by hand.
const char* kAllReduceCsv =
    "tool,collective,bytes,dtype,op,inplace,busbw_GBps,status\n"
    "x,all_reduce,16777216,float,sum,0,5,ok\n"
    "x,all_reduce,16777216,float,sum,1,6,ok\n"
    "x,all_reduce,67108864,float,sum,1,8,ok\n"
    "x,all_reduce,67108864,float,sum,1,9,ok\n"
    "x,all_reduce,67108864,float,sum,1,7,ok\n"
    "x,all_gather,33554432,float,none,1,50,ok\n";

TEST(PlanBusbw, InterpolatesLinearInLogBytesBetweenNeighbours) {
  const BusbwCurve c = read_busbw_curve(parse_csv(kAllReduceCsv, "ar.csv"), "ar.csv", "--allreduce", "float");
  EXPECT_TRUE(c.inplace);
  ASSERT_EQ(c.points.size(), 2u);
  EXPECT_DOUBLE_EQ(c.points[1].busbw_GBps, 8);  // median of 8, 9, 7
  // 25 MiB: log2(25/16) / log2(64/16) = 0.32193 of the way from 6 to 8.
  const Figure f = busbw_at(c, 26214400, "--bucket-mb", "25");
  EXPECT_NEAR(f.value, 6 + 2 * std::log2(25.0 / 16) / 2, 1e-12);
  EXPECT_CONTAINS(f.source, "ar.csv (all_reduce float in place, lines 3 and 4,5,6");
  EXPECT_DOUBLE_EQ(busbw_at(c, 16777216, "--bucket-mb", "16").value, 6);
  try {
    busbw_at(c, 128.0 * 1024 * 1024, "--bucket-mb", "128");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "--bucket-mb '128'");
    EXPECT_CONTAINS(e.what(), "outside the sizes ar.csv measured (16M to 64M)");
  }
}

// A --split run's group rows (and per-rank rows) measured a part of the
// communicator: the curve is read from the whole communicator's rows only.
TEST(PlanBusbw, SplitGroupAndRankRowsAreLeftOut) {
  const char* csv =
      "tool,collective,bytes,dtype,op,inplace,group,rank,busbw_GBps,status\n"
      "x,all_reduce,16777216,float,sum,1,,,100,ok\n"
      "x,all_reduce,16777216,float,sum,1,0,,300,ok\n"
      "x,all_reduce,16777216,float,sum,1,1,,20,ok\n"
      "x,all_reduce,16777216,float,sum,1,,3,5,ok\n";
  const BusbwCurve c = read_busbw_curve(parse_csv(csv, "split.csv"), "split.csv", "--allreduce", "float");
  ASSERT_EQ(c.points.size(), 1u);
  EXPECT_DOUBLE_EQ(c.points[0].busbw_GBps, 100);
}

TEST(PlanBusbw, ACsvWithoutTheColumnsNamesFileAndColumn) {
  try {
    read_busbw_curve(parse_csv("tool,bytes,status\nx,8,ok\n", "t.csv"), "t.csv", "--allreduce", "float");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "--allreduce 't.csv': has no 'collective' column");
  }
  try {
    read_step_times(parse_csv("batch_size,status\n8,ok\n", "s.csv"), "s.csv", "--sweep");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "--sweep 's.csv': has no 'step_time_ms' column");
  }
  EXPECT_THROW(read_busbw_curve(parse_csv("collective,bytes,busbw_GBps,status\nall_reduce,x,1,ok\n", "u.csv"), "u.csv",
                                "--allreduce", "float"),
               UsageError);
}

TEST(PlanReaders, StepTimesAndCheckpointCosts) {
  const auto times = read_step_times(
      parse_csv("batch_size,step_time_ms,status\n8,10,ok\n8,12,ok\n8,11,ok\n16,,oom\n", "s.csv"), "s.csv", "--sweep");
  ASSERT_EQ(times.size(), 1u);
  EXPECT_DOUBLE_EQ(times.at(8).value, 11);
  EXPECT_EQ(times.at(8).source, "s.csv lines 2,3,4 (batch_size 8)");

  const CheckpointCosts c = read_checkpoint_costs(
      parse_csv("stage,time_s,mtbf_h,status\nsave,0.5,,ok\nrestore,0.25,,ok\nasync.snapshot,0.05,,ok\n"
                "advice_sync,,24,ok\n",
                "c.csv"),
      "c.csv", "--checkpoint");
  EXPECT_DOUBLE_EQ(c.stall_s.value, 0.5);
  EXPECT_EQ(c.stall_s.source, "c.csv line 2 (stage save)");
  EXPECT_DOUBLE_EQ(c.restore_s.value, 0.25);
  EXPECT_DOUBLE_EQ(c.mtbf_s.value, 86400);
  EXPECT_FALSE(c.has_async());  // no persist row
}

}  // namespace
