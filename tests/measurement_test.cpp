// The measurement policy: validation, warm-up, and each way the timed loop
// stops. A fake clock that advances only when the work runs makes the time
// cap and the warm-up time deterministic.
#include "harness/measure/measurement.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include <functional>
#include <string>
#include <vector>

#include "harness/core/interrupt.hpp"
#include "harness/core/usage_error.hpp"
#include "tests/support.hpp"

namespace redline {
namespace {

// A clock that moves `step` seconds each time the work runs.
struct FakeClock {
  double now = 0;
  double step = 1;
  std::function<double()> clock() {
    return [this] { return now; };
  }
};

class MeasurementTest : public ::testing::Test {
 protected:
  void TearDown() override { set_interrupted_for_testing(false); }
};

std::string policy_error(const MeasurementPolicy& policy) {
  try {
    policy.validate();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected validate() to throw";
  return "";
}

TEST_F(MeasurementTest, DefaultPolicyIsValid) { EXPECT_NO_THROW(MeasurementPolicy{}.validate()); }

TEST_F(MeasurementTest, ValidationNamesTheBadSetting) {
  MeasurementPolicy p;
  p.warmup_iterations = -1;
  EXPECT_CONTAINS(policy_error(p), "warm-up iterations '-1'");

  p = {};
  p.warmup_seconds = -0.5;
  EXPECT_CONTAINS(policy_error(p), "warm-up seconds");

  p = {};
  p.min_repetitions = 0;
  EXPECT_CONTAINS(policy_error(p), "repetitions '0'");

  p = {};
  p.min_repetitions = 10;
  p.max_repetitions = 5;
  const std::string what = policy_error(p);
  EXPECT_CONTAINS(what, "max repetitions '5'");
  EXPECT_CONTAINS(what, "(10)");

  p = {};
  p.target_cv = -0.01;
  EXPECT_CONTAINS(policy_error(p), "target CV");

  p = {};
  p.max_seconds = -1;
  EXPECT_CONTAINS(policy_error(p), "max seconds");

  p = {};
  p.min_seconds = -1;
  EXPECT_CONTAINS(policy_error(p), "min seconds");
}

TEST_F(MeasurementTest, EqualMinAndMaxIsValid) {
  MeasurementPolicy p;
  p.min_repetitions = p.max_repetitions = 1;
  p.warmup_iterations = 0;
  p.target_cv = 0;
  p.max_seconds = 0;
  EXPECT_NO_THROW(p.validate());
}

TEST_F(MeasurementTest, MeasureValidatesBeforeRunning) {
  MeasurementPolicy p;
  p.min_repetitions = 0;
  int calls = 0;
  EXPECT_THROW(measure(p, [&] { return static_cast<double>(++calls); }), UsageError);
  EXPECT_EQ(calls, 0);
}

TEST_F(MeasurementTest, ZeroNegativeOrNanTimesAreRefused) {
  // A broken timer must fail loudly, never summarise as an impossibly fast result.
  for (double bad : {0.0, -1.0, std::nan("")}) {
    MeasurementPolicy policy;
    policy.warmup_iterations = 0;
    EXPECT_THROW(measure(policy, [bad] { return bad; }), std::runtime_error) << bad;
  }
}

TEST_F(MeasurementTest, WarmupRunsAreCountedAndNotSampled) {
  MeasurementPolicy p;
  p.warmup_iterations = 3;
  p.min_repetitions = p.max_repetitions = 5;
  p.target_cv = 0;
  p.max_seconds = 0;
  int calls = 0;
  const Measurement m = measure(p, [&] { return static_cast<double>(++calls); });
  EXPECT_EQ(calls, 8);
  EXPECT_EQ(m.warmup_iterations, 3);
  EXPECT_EQ(m.samples, (std::vector<double>{4, 5, 6, 7, 8}));
  EXPECT_EQ(m.stop, StopReason::repetition_cap);
  EXPECT_EQ(m.summary.count, 5u);
  EXPECT_DOUBLE_EQ(m.summary.median, 6);
}

TEST_F(MeasurementTest, NoWarmup) {
  MeasurementPolicy p;
  p.warmup_iterations = 0;
  p.min_repetitions = p.max_repetitions = 2;
  p.target_cv = 0;
  int calls = 0;
  const Measurement m = measure(p, [&] { return static_cast<double>(++calls); });
  EXPECT_EQ(m.warmup_iterations, 0);
  EXPECT_EQ(m.samples, (std::vector<double>{1, 2}));
}

TEST_F(MeasurementTest, WarmupSecondsExtendWarmupByTheClock) {
  FakeClock clock;
  clock.step = 0.25;
  MeasurementPolicy p;
  p.warmup_iterations = 1;
  p.warmup_seconds = 1.0;
  p.min_repetitions = p.max_repetitions = 2;
  p.target_cv = 0;
  p.max_seconds = 0;
  int calls = 0;
  const Measurement m = measure(
      p, [&] { clock.now += clock.step; return static_cast<double>(++calls); }, clock.clock());
  // 0.25 s per run: warm-up ends once 1.0 s has passed, after 4 runs.
  EXPECT_EQ(m.warmup_iterations, 4);
  EXPECT_EQ(m.samples, (std::vector<double>{5, 6}));
}

TEST_F(MeasurementTest, WarmupIterationsStillRunWhenSecondsAreMet) {
  FakeClock clock;
  clock.step = 10;  // one run is already past the warm-up time
  MeasurementPolicy p;
  p.warmup_iterations = 3;
  p.warmup_seconds = 1;
  p.min_repetitions = p.max_repetitions = 1;
  p.target_cv = 0;
  p.max_seconds = 0;
  const Measurement m = measure(p, [&] { clock.now += clock.step; return 1.0; }, clock.clock());
  EXPECT_EQ(m.warmup_iterations, 3);
}

TEST_F(MeasurementTest, StopsOnNoiseTargetOnceMinimumIsIn) {
  MeasurementPolicy p;
  p.warmup_iterations = 0;
  p.min_repetitions = 5;
  p.max_repetitions = 1000;
  p.target_cv = 0.02;
  p.max_seconds = 0;
  int calls = 0;
  const Measurement m = measure(p, [&] { ++calls; return 3.0; });
  EXPECT_EQ(m.stop, StopReason::noise_target);
  EXPECT_EQ(m.samples.size(), 5u);  // not before the minimum, not after it
  EXPECT_EQ(calls, 5);
  EXPECT_DOUBLE_EQ(m.summary.cv, 0);
}

// Identical samples of 1 s each on the fake clock, no warm-up, a 2% CV target.
Measurement steady_one_second_samples(int min_repetitions, double min_seconds, double max_seconds) {
  FakeClock clock;
  MeasurementPolicy p;
  p.warmup_iterations = 0;
  p.min_repetitions = min_repetitions;
  p.max_repetitions = 1000;
  p.target_cv = 0.02;
  p.min_seconds = min_seconds;
  p.max_seconds = max_seconds;
  return measure(p, [&] { clock.now += clock.step; return 3.0; }, clock.clock());
}

TEST_F(MeasurementTest, NoiseStopWaitsForTheMinimumTime) {
  // Steady samples would meet the CV target at the 5th; the minimum time
  // (8 runs of 1 s on the fake clock) holds the stop back until then.
  const Measurement m = steady_one_second_samples(5, 8, 0);
  EXPECT_EQ(m.stop, StopReason::noise_target);
  EXPECT_EQ(m.samples.size(), 8u);
}

TEST_F(MeasurementTest, TheTimeCapStillEndsAMinimumTimeBeyondIt) {
  // Derived policies (peak's sustained pass, --algos' candidate timing)
  // lower the cap and keep the flags' minimum: the cap wins, no error.
  const Measurement m = steady_one_second_samples(2, 8, 3);
  EXPECT_EQ(m.stop, StopReason::time_cap);
  EXPECT_EQ(m.samples.size(), 3u);
}

TEST_F(MeasurementTest, NoiseTargetNeedsTwoSamples) {
  MeasurementPolicy p;
  p.warmup_iterations = 0;
  p.min_repetitions = 1;
  p.max_repetitions = 100;
  p.target_cv = 0.02;
  p.max_seconds = 0;
  const Measurement m = measure(p, [] { return 3.0; });
  EXPECT_EQ(m.stop, StopReason::noise_target);
  EXPECT_EQ(m.samples.size(), 2u);  // one sample has no spread to judge
}

TEST_F(MeasurementTest, NoisySamplesRunToTheRepetitionCap) {
  MeasurementPolicy p;
  p.warmup_iterations = 0;
  p.min_repetitions = 5;
  p.max_repetitions = 20;
  p.target_cv = 0.02;
  p.max_seconds = 0;
  int calls = 0;
  const Measurement m = measure(p, [&] { return (++calls % 2) ? 1.0 : 2.0; });
  EXPECT_EQ(m.stop, StopReason::repetition_cap);
  EXPECT_EQ(m.samples.size(), 20u);
  EXPECT_EQ(calls, 20);
}

TEST_F(MeasurementTest, ZeroTargetCvDisablesTheNoiseStop) {
  MeasurementPolicy p;
  p.warmup_iterations = 0;
  p.min_repetitions = 2;
  p.max_repetitions = 50;
  p.target_cv = 0;
  p.max_seconds = 0;
  const Measurement m = measure(p, [] { return 1.0; });
  EXPECT_EQ(m.stop, StopReason::repetition_cap);
  EXPECT_EQ(m.samples.size(), 50u);
}

TEST_F(MeasurementTest, StopsOnTimeCapByTheInjectedClock) {
  FakeClock clock;
  MeasurementPolicy p;
  p.warmup_iterations = 2;
  p.min_repetitions = 3;
  p.max_repetitions = 1000;
  p.target_cv = 0;
  p.max_seconds = 10;
  int calls = 0;
  const Measurement m = measure(
      p, [&] { clock.now += clock.step; return static_cast<double>(++calls); }, clock.clock());
  EXPECT_EQ(m.stop, StopReason::time_cap);
  // The cap counts from the end of warm-up: 10 timed runs of 1 s.
  EXPECT_EQ(m.warmup_iterations, 2);
  EXPECT_EQ(m.samples.size(), 10u);
  EXPECT_DOUBLE_EQ(m.samples.front(), 3);
}

TEST_F(MeasurementTest, TimeCapWaitsForMinimumRepetitions) {
  FakeClock clock;
  clock.step = 100;  // every run alone is past the cap
  MeasurementPolicy p;
  p.warmup_iterations = 0;
  p.min_repetitions = 4;
  p.max_repetitions = 1000;
  p.target_cv = 0;
  p.max_seconds = 1;
  const Measurement m = measure(p, [&] { clock.now += clock.step; return 1.0; }, clock.clock());
  EXPECT_EQ(m.stop, StopReason::time_cap);
  EXPECT_EQ(m.samples.size(), 4u);
}

TEST_F(MeasurementTest, InterruptedBeforeStartRunsNothing) {
  set_interrupted_for_testing(true);
  MeasurementPolicy p;
  int calls = 0;
  const Measurement m = measure(p, [&] { ++calls; return 1.0; });
  EXPECT_EQ(m.stop, StopReason::interrupted);
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(m.samples.empty());
  EXPECT_EQ(m.summary.count, 0u);
}

TEST_F(MeasurementTest, InterruptedMidwayKeepsSamplesSoFar) {
  MeasurementPolicy p;
  p.warmup_iterations = 1;
  p.min_repetitions = 10;
  p.max_repetitions = 10;
  p.target_cv = 0;
  p.max_seconds = 0;
  int calls = 0;
  const Measurement m = measure(p, [&] {
    if (++calls == 4) set_interrupted_for_testing(true);  // during the 3rd timed run
    return static_cast<double>(calls);
  });
  EXPECT_EQ(m.stop, StopReason::interrupted);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(m.samples, (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(m.summary.count, 3u);
  EXPECT_DOUBLE_EQ(m.summary.median, 3);
}

TEST_F(MeasurementTest, FixedCountTakesExactlyThatManyWhateverTheNoiseOrTheClock) {
  const MeasurementPolicy p = fixed_count_policy(7);
  EXPECT_NO_THROW(p.validate());
  FakeClock clock;
  clock.step = 100;  // far past the default time cap
  int calls = 0;
  // Identical samples would meet any noise target after two.
  const Measurement m = measure(p, [&] { clock.now += clock.step; ++calls; return 1.0; }, clock.clock());
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(m.warmup_iterations, 0);
  EXPECT_EQ(m.samples.size(), 7u);
  EXPECT_EQ(m.stop, StopReason::repetition_cap);
}

TEST_F(MeasurementTest, FixedCountOfOneIsValid) {
  const Measurement m = measure(fixed_count_policy(1), [] { return 3.0; });
  EXPECT_EQ(m.samples, (std::vector<double>{3}));
}

TEST_F(MeasurementTest, InterruptIgnoredWhenThePolicySaysTheCountMustBeWhole) {
  MeasurementPolicy p = fixed_count_policy(5);
  p.warmup_iterations = 2;
  p.stops_on_interrupt = false;
  int calls = 0;
  const Measurement m = measure(p, [&] {
    if (++calls == 1) set_interrupted_for_testing(true);  // during the warm-up
    return 1.0;
  });
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(m.warmup_iterations, 2);
  EXPECT_EQ(m.samples.size(), 5u);
  EXPECT_EQ(m.stop, StopReason::repetition_cap);
}

TEST_F(MeasurementTest, DefaultClockWorks) {
  MeasurementPolicy p;
  p.warmup_iterations = 1;
  p.min_repetitions = p.max_repetitions = 3;
  p.target_cv = 0;
  const Measurement m = measure(p, [] { return 2.0; });
  EXPECT_EQ(m.stop, StopReason::repetition_cap);
  EXPECT_EQ(m.samples.size(), 3u);
}

TEST_F(MeasurementTest, StopReasonNames) {
  EXPECT_EQ(to_string(StopReason::noise_target), "noise_target");
  EXPECT_EQ(to_string(StopReason::repetition_cap), "repetition_cap");
  EXPECT_EQ(to_string(StopReason::time_cap), "time_cap");
  EXPECT_EQ(to_string(StopReason::interrupted), "interrupted");
}

}  // namespace
}  // namespace redline
