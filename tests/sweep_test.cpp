// The upward sweep and its bisection, driven by point functions whose answer
// is known: everything up to a threshold fits, everything above runs out of
// memory.
#include "harness/measure/sweep.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "harness/core/axis.hpp"
#include "harness/core/interrupt.hpp"

namespace redline {
namespace {

using Sizes = std::vector<std::int64_t>;

// Records what ran; OOM above `threshold`.
struct MemoryModel {
  std::int64_t threshold;
  std::vector<std::pair<std::int64_t, bool>> calls;  // size, from_bisect

  PointFunction fn() {
    return [this](std::int64_t size, bool from_bisect) -> PointOutcome {
      calls.emplace_back(size, from_bisect);
      if (size > threshold) return {PointStatus::oom, "CUDA out of memory"};
      return {PointStatus::ok, ""};
    };
  }
};

Sizes sizes_of(const std::vector<SweepPoint>& points) {
  Sizes s;
  for (const auto& p : points) s.push_back(p.size);
  return s;
}

class SweepTest : public ::testing::Test {
 protected:
  void TearDown() override { set_interrupted_for_testing(false); }
};

TEST_F(SweepTest, WholeAxisFits) {
  MemoryModel model{1000, {}};
  const SweepResult r = run_sweep({1, 2, 4, 8}, {}, model.fn());
  EXPECT_EQ(sizes_of(r.points), (Sizes{1, 2, 4, 8}));
  for (const auto& p : r.points) EXPECT_EQ(p.outcome.status, PointStatus::ok);
  EXPECT_EQ(r.largest_fit, 8);
  EXPECT_FALSE(r.first_oom);
  EXPECT_EQ(r.safe_max, 8);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(r.stop_reason, "");
}

TEST_F(SweepTest, StopsAtFirstOomAndSkipsTheRest) {
  MemoryModel model{100, {}};
  const SweepResult r = run_sweep(geometric_axis(1, 1024, 2), {}, model.fn());
  // 1..64 fit, 128 runs out of memory; 256..1024 are never run.
  ASSERT_EQ(model.calls.size(), 8u);
  EXPECT_EQ(model.calls.back().first, 128);
  EXPECT_EQ(r.largest_fit, 64);
  EXPECT_EQ(r.first_oom, 128);
  EXPECT_EQ(r.stop_reason, "out of memory at 128");
  EXPECT_EQ(sizes_of(r.points), (Sizes{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}));
  EXPECT_EQ(r.points[7].outcome.status, PointStatus::oom);
  EXPECT_EQ(r.points[7].outcome.note, "CUDA out of memory");
  for (std::size_t i = 8; i < r.points.size(); ++i) {
    EXPECT_EQ(r.points[i].outcome.status, PointStatus::skipped);
    EXPECT_EQ(r.points[i].outcome.note, "not run: out of memory at 128");
    EXPECT_FALSE(r.points[i].from_bisect);
  }
}

TEST_F(SweepTest, BisectFindsTheExactMaximum) {
  MemoryModel model{100, {}};
  SweepOptions options;
  options.bisect = true;
  const SweepResult r = run_sweep(geometric_axis(1, 256, 2), options, model.fn());
  EXPECT_EQ(r.largest_fit, 100);
  EXPECT_EQ(r.first_oom, 101);
  EXPECT_EQ(r.safe_max, 100);
  // The bisection searched strictly between 64 (fit) and 128 (OOM), each
  // probe marked as such, and needed no more than log2(64) = 6 probes.
  int probes = 0;
  for (const auto& [size, from_bisect] : model.calls)
    if (from_bisect) {
      ++probes;
      EXPECT_GT(size, 64);
      EXPECT_LT(size, 128);
    }
  EXPECT_GE(probes, 1);
  EXPECT_LE(probes, 6);
  for (const auto& p : r.points)
    if (p.from_bisect) EXPECT_EQ(p.outcome.status, p.size <= 100 ? PointStatus::ok : PointStatus::oom);
  // 256 is still reported as not run, and the ok points include the probes.
  EXPECT_EQ(r.points[8].size, 256);
  EXPECT_EQ(r.points[8].outcome.status, PointStatus::skipped);
  const auto ok = r.ok_points();
  ASSERT_FALSE(ok.empty());
  EXPECT_EQ(ok.back().size, 100);
  for (std::size_t i = 1; i < ok.size(); ++i) EXPECT_LT(ok[i - 1].size, ok[i].size);
}

TEST_F(SweepTest, BisectForEveryThresholdBetweenTwoAxisPoints) {
  for (std::int64_t threshold = 64; threshold < 128; ++threshold) {
    MemoryModel model{threshold, {}};
    SweepOptions options;
    options.bisect = true;
    const SweepResult r = run_sweep(geometric_axis(1, 256, 2), options, model.fn());
    EXPECT_EQ(r.largest_fit, threshold);
    EXPECT_EQ(r.first_oom, threshold + 1);
    std::set<std::int64_t> distinct;
    for (const auto& c : model.calls) distinct.insert(c.first);
    EXPECT_EQ(distinct.size(), model.calls.size()) << "a size ran twice for threshold " << threshold;
  }
}

TEST_F(SweepTest, BisectTreatsOtherFailuresAsNotFitting) {
  // 90 and above: 90..100 fail with an error, above 100 OOM.
  std::vector<std::int64_t> ran;
  SweepOptions options;
  options.bisect = true;
  options.max_consecutive_failures = 0;  // let the bisection run to the end
  const SweepResult r = run_sweep(geometric_axis(1, 256, 2), options, [&](std::int64_t size, bool) -> PointOutcome {
    ran.push_back(size);
    if (size > 100) return {PointStatus::oom, "oom"};
    if (size >= 90) return {PointStatus::error, "crash"};
    return {PointStatus::ok, ""};
  });
  EXPECT_EQ(r.largest_fit, 89);
  EXPECT_FALSE(r.largest_fit_is_exact);  // 90 crashed: it is not known to be out of memory
  // No probe above the first failure's size was judged to fit.
  for (const auto& p : r.points)
    if (p.outcome.status == PointStatus::ok) EXPECT_LE(p.size, 89);
}

TEST_F(SweepTest, BisectStopsAfterFailuresInARowAndIsNotExact) {
  SweepOptions options;
  options.bisect = true;  // default: 2 failures in a row stop it
  const SweepResult r = run_sweep(geometric_axis(1, 256, 2), options, [&](std::int64_t size, bool) -> PointOutcome {
    if (size > 100) return {PointStatus::oom, "oom"};
    if (size >= 90) return {PointStatus::timeout, "hang"};
    return {PointStatus::ok, ""};
  });
  EXPECT_EQ(r.largest_fit, 88);
  EXPECT_FALSE(r.largest_fit_is_exact);
  EXPECT_EQ(r.stop_reason, "bisection stopped after 2 failures in a row");
}

TEST_F(SweepTest, BisectEndingOnAnOomIsExact) {
  SweepOptions options;
  options.bisect = true;
  const SweepResult r = run_sweep(geometric_axis(1, 256, 2), options, [&](std::int64_t size, bool) -> PointOutcome {
    return size > 100 ? PointOutcome{PointStatus::oom, "oom"} : PointOutcome{PointStatus::ok, ""};
  });
  EXPECT_EQ(r.largest_fit, 100);
  EXPECT_EQ(r.first_oom, 101);
  EXPECT_TRUE(r.largest_fit_is_exact);
}

TEST_F(SweepTest, NoBisectWithoutAFit) {
  MemoryModel model{0, {}};
  SweepOptions options;
  options.bisect = true;
  const SweepResult r = run_sweep({1, 2, 4}, options, model.fn());
  EXPECT_EQ(model.calls.size(), 1u);
  EXPECT_FALSE(r.largest_fit);
  EXPECT_EQ(r.first_oom, 1);
  EXPECT_FALSE(r.safe_max);
  EXPECT_TRUE(r.ok_points().empty());
  EXPECT_EQ(r.points.size(), 3u);
}

TEST_F(SweepTest, NoBisectWhenNeighboursAlreadyKnown) {
  MemoryModel model{4, {}};
  SweepOptions options;
  options.bisect = true;
  const SweepResult r = run_sweep({1, 2, 3, 4, 5, 6}, options, model.fn());
  EXPECT_EQ(model.calls.size(), 5u);
  for (const auto& c : model.calls) EXPECT_FALSE(c.second);
  EXPECT_EQ(r.largest_fit, 4);
  EXPECT_EQ(r.first_oom, 5);
}

// The case: a sweep to 4096 whose limit is 774. Upward 1..1024 is
// 11 trials; a right prediction then costs 2 more (774 fits, 775 does not),
// and one off by up to 2 at most 4: never past log2(4096) + 3 = 15 in all.
TEST_F(SweepTest, APredictedLimitIsFoundInAFewProbes) {
  for (std::int64_t error = -2; error <= 2; ++error) {
    MemoryModel model{774, {}};
    SweepOptions options;
    options.bisect = true;
    options.predict_largest_fit = [&] { return std::optional<std::int64_t>(774 + error); };
    const SweepResult r = run_sweep(geometric_axis(1, 4096, 2), options, model.fn());
    EXPECT_EQ(r.largest_fit, 774) << "prediction off by " << error;
    EXPECT_EQ(r.first_oom, 775);
    EXPECT_TRUE(r.largest_fit_is_exact);
    EXPECT_EQ(r.predicted_fit, 774 + error);
    // Right or one too high: the prediction and its neighbour settle it.
    EXPECT_EQ(model.calls.size(), error == 0 || error == 1 ? 13u : 15u) << "prediction off by " << error;
    EXPECT_EQ(model.calls[11].first, 774 + error) << "the prediction is probed first";
  }
}

// Against plain bisection: for every limit between two axis points and
// predictions right, near, far off or outside the range, the exact limit is
// found, no size runs twice, and at most 4 probes are added.
TEST_F(SweepTest, APredictionNeverCostsMoreThanFourProbes) {
  for (std::int64_t threshold = 64; threshold < 128; ++threshold) {
    MemoryModel plain{threshold, {}};
    SweepOptions options;
    options.bisect = true;
    run_sweep(geometric_axis(1, 256, 2), options, plain.fn());
    for (const std::int64_t predicted : {threshold, threshold - 1, threshold + 3, threshold - 6, std::int64_t{65},
                                         std::int64_t{127}, std::int64_t{30}, std::int64_t{500}}) {
      MemoryModel model{threshold, {}};
      options.predict_largest_fit = [&] { return std::optional<std::int64_t>(predicted); };
      const SweepResult r = run_sweep(geometric_axis(1, 256, 2), options, model.fn());
      EXPECT_EQ(r.largest_fit, threshold) << predicted;
      EXPECT_EQ(r.first_oom, threshold + 1) << predicted;
      EXPECT_TRUE(r.largest_fit_is_exact);
      EXPECT_EQ(r.prediction_used, predicted > 64 && predicted < 128) << predicted;
      EXPECT_LE(model.calls.size(), plain.calls.size() + 4) << threshold << " predicted " << predicted;
      std::set<std::int64_t> distinct;
      for (const auto& c : model.calls) distinct.insert(c.first);
      EXPECT_EQ(distinct.size(), model.calls.size()) << threshold << " predicted " << predicted;
      for (const auto& c : model.calls)
        if (c.second) EXPECT_TRUE(c.first > 64 && c.first < 128) << c.first;
    }
  }
}

TEST_F(SweepTest, NoPredictionMeansPlainBisection) {
  MemoryModel plain{100, {}}, unsure{100, {}};
  SweepOptions options;
  options.bisect = true;
  run_sweep(geometric_axis(1, 256, 2), options, plain.fn());
  int asked = 0;
  options.predict_largest_fit = [&] {
    ++asked;
    return std::optional<std::int64_t>();
  };
  const SweepResult r = run_sweep(geometric_axis(1, 256, 2), options, unsure.fn());
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(unsure.calls, plain.calls);
  EXPECT_FALSE(r.predicted_fit);
}

TEST_F(SweepTest, LargestRunIsTheLargestSizeThatRan) {
  MemoryModel model{100, {}};
  SweepResult r = run_sweep(geometric_axis(1, 4096, 2), {}, model.fn());
  EXPECT_EQ(r.largest_run, 128);  // 256..4096 never ran
  r = run_sweep({}, {}, model.fn());
  EXPECT_FALSE(r.largest_run);
}

TEST_F(SweepTest, SafetyMarginReducesTheLargestFit) {
  MemoryModel model{100, {}};
  SweepOptions options;
  options.bisect = true;
  options.safety_margin = 0.1;
  SweepResult r = run_sweep(geometric_axis(1, 256, 2), options, model.fn());
  EXPECT_EQ(r.largest_fit, 100);
  EXPECT_EQ(r.safe_max, 90);

  MemoryModel model2{101, {}};
  options.safety_margin = 0.5;
  r = run_sweep({101, 202}, options, model2.fn());
  EXPECT_EQ(r.largest_fit, 101);
  EXPECT_EQ(r.safe_max, 50);  // rounded down: the safe side
}

TEST_F(SweepTest, SafetyMarginNeverGoesBelowOne) {
  MemoryModel model{1, {}};
  SweepOptions options;
  options.safety_margin = 0.9;
  const SweepResult r = run_sweep({1, 2}, options, model.fn());
  EXPECT_EQ(r.largest_fit, 1);
  EXPECT_EQ(r.safe_max, 1);
}

TEST_F(SweepTest, ConsecutiveFailuresStopTheSweep) {
  std::vector<std::int64_t> ran;
  const SweepResult r = run_sweep({1, 2, 4, 8, 16}, {}, [&](std::int64_t size, bool) -> PointOutcome {
    ran.push_back(size);
    if (size == 1) return {PointStatus::ok, ""};
    return {size == 2 ? PointStatus::error : PointStatus::timeout, "failed"};
  });
  EXPECT_EQ(ran, (Sizes{1, 2, 4}));
  EXPECT_EQ(r.stop_reason, "2 failures in a row");
  EXPECT_EQ(r.largest_fit, 1);
  EXPECT_FALSE(r.first_oom);
  ASSERT_EQ(r.points.size(), 5u);
  EXPECT_EQ(r.points[1].outcome.status, PointStatus::error);
  EXPECT_EQ(r.points[2].outcome.status, PointStatus::timeout);
  EXPECT_EQ(r.points[3].outcome.status, PointStatus::skipped);
  EXPECT_EQ(r.points[3].outcome.note, "not run: 2 failures in a row");
  EXPECT_EQ(r.points[4].outcome.status, PointStatus::skipped);
}

TEST_F(SweepTest, AnOkBetweenFailuresResetsTheCount) {
  std::vector<std::int64_t> ran;
  const SweepResult r = run_sweep({1, 2, 3, 4, 5}, {}, [&](std::int64_t size, bool) -> PointOutcome {
    ran.push_back(size);
    return {size % 2 == 0 ? PointStatus::ok : PointStatus::error, ""};
  });
  EXPECT_EQ(ran, (Sizes{1, 2, 3, 4, 5}));
  EXPECT_EQ(r.stop_reason, "");
  EXPECT_EQ(r.largest_fit, 4);
}

TEST_F(SweepTest, FailureLimitIsConfigurableAndZeroDisablesIt) {
  auto always_error = [](std::int64_t, bool) -> PointOutcome { return {PointStatus::error, "x"}; };
  SweepOptions options;
  options.max_consecutive_failures = 3;
  SweepResult r = run_sweep({1, 2, 3, 4, 5}, options, always_error);
  EXPECT_EQ(r.stop_reason, "3 failures in a row");
  EXPECT_EQ(r.points[3].outcome.status, PointStatus::skipped);

  options.max_consecutive_failures = 0;
  r = run_sweep({1, 2, 3, 4, 5}, options, always_error);
  EXPECT_EQ(r.stop_reason, "");
  for (const auto& p : r.points) EXPECT_EQ(p.outcome.status, PointStatus::error);
  EXPECT_FALSE(r.largest_fit);
  EXPECT_FALSE(r.safe_max);
}

TEST_F(SweepTest, InterruptedStopsBeforeTheNextPoint) {
  std::vector<std::int64_t> ran;
  SweepOptions options;
  options.bisect = true;
  const SweepResult r = run_sweep({1, 2, 4, 8, 16}, options, [&](std::int64_t size, bool) -> PointOutcome {
    ran.push_back(size);
    if (size == 2) set_interrupted_for_testing(true);  // Ctrl-C during the point at 2
    return {PointStatus::ok, ""};
  });
  EXPECT_EQ(ran, (Sizes{1, 2}));
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.stop_reason, "interrupted");
  EXPECT_EQ(r.largest_fit, 2);  // what was measured is kept
  ASSERT_EQ(r.points.size(), 5u);
  for (std::size_t i = 2; i < 5; ++i) {
    EXPECT_EQ(r.points[i].outcome.status, PointStatus::skipped);
    EXPECT_EQ(r.points[i].outcome.note, "not run: interrupted");
  }
}

// A point interrupted while it ran comes back skipped: it did not run, so the largest size that
// ran (first_oom_batch's "none up to N") is the one before it.
TEST_F(SweepTest, AnInterruptedPointIsNotTheLargestRun) {
  const SweepResult r = run_sweep({1, 2, 4, 8}, {}, [&](std::int64_t size, bool) -> PointOutcome {
    if (size < 4) return {PointStatus::ok, ""};
    set_interrupted_for_testing(true);  // Ctrl-C during the point at 4
    return {PointStatus::skipped, "interrupted"};
  });
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.largest_run, 2);
}

// The last point, or the one that stops the sweep, has no next point to stop
// before: the interrupt still ends the sweep and says so.
TEST_F(SweepTest, InterruptedDuringTheLastPointSaysSo) {
  SweepResult r = run_sweep({1, 2}, {}, [&](std::int64_t size, bool) -> PointOutcome {
    if (size < 2) return {PointStatus::ok, ""};
    set_interrupted_for_testing(true);
    return {PointStatus::skipped, "interrupted"};
  });
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.stop_reason, "interrupted");
  EXPECT_EQ(r.largest_run, 1);

  set_interrupted_for_testing(false);
  SweepOptions options;
  options.bisect = true;
  int bisect_probes = 0;
  r = run_sweep({1, 2, 4, 8}, options, [&](std::int64_t size, bool from_bisect) -> PointOutcome {
    bisect_probes += from_bisect;
    if (size < 4) return {PointStatus::ok, ""};
    set_interrupted_for_testing(true);  // Ctrl-C during the point that ran out of memory
    return {PointStatus::oom, ""};
  });
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.stop_reason, "out of memory at 4, then interrupted");
  EXPECT_EQ(bisect_probes, 0);
  EXPECT_EQ(r.first_oom, 4);
}

TEST_F(SweepTest, InterruptedDuringBisectStopsBisecting) {
  std::vector<std::pair<std::int64_t, bool>> ran;
  SweepOptions options;
  options.bisect = true;
  const SweepResult r = run_sweep(geometric_axis(1, 256, 2), options, [&](std::int64_t size, bool from_bisect) {
    ran.emplace_back(size, from_bisect);
    if (from_bisect) set_interrupted_for_testing(true);
    return PointOutcome{size > 100 ? PointStatus::oom : PointStatus::ok, ""};
  });
  int probes = 0;
  for (const auto& c : ran) probes += c.second;
  EXPECT_EQ(probes, 1);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.first_oom, 128);
  EXPECT_EQ(r.largest_fit, 96);  // the one probe, between 64 and 128, fit
}

TEST_F(SweepTest, InterruptedBeforeStartRunsNothing) {
  set_interrupted_for_testing(true);
  int calls = 0;
  const SweepResult r = run_sweep({1, 2}, {}, [&](std::int64_t, bool) {
    ++calls;
    return PointOutcome{};
  });
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.points.size(), 2u);
  EXPECT_FALSE(r.largest_fit);
}

TEST_F(SweepTest, EmptyAxis) {
  const SweepResult r = run_sweep({}, {}, [](std::int64_t, bool) { return PointOutcome{}; });
  EXPECT_TRUE(r.points.empty());
  EXPECT_FALSE(r.largest_fit);
  EXPECT_EQ(r.stop_reason, "");
}

TEST_F(SweepTest, StatusNames) {
  EXPECT_EQ(to_string(PointStatus::ok), "ok");
  EXPECT_EQ(to_string(PointStatus::oom), "oom");
  EXPECT_EQ(to_string(PointStatus::error), "error");
  EXPECT_EQ(to_string(PointStatus::timeout), "timeout");
  EXPECT_EQ(to_string(PointStatus::skipped), "skipped");
}

}  // namespace
}  // namespace redline
