// The batch-sweep engine's trial hooks, on real child processes: each
// trial's process gets the variables the hook gives for its batch, and the
// hook that sees each ended trial can add to its row (batch_sweep --profile
// runs each trial under the profiler this way, and its sweep is another
// configuration).
#include <gtest/gtest.h>

#include <set>

#include "harness/batch/batch_sweep.hpp"
#include "harness/batch/case_config.hpp"

namespace redline {
namespace {

TEST(BatchTrialHooks, EachTrialGetsItsVariablesAndItsRowIsSeen) {
  BatchSweepOptions options;
  // Fails unless the variable holds the trial's own batch size.
  options.command = {"sh", "-c", "test \"$WATCHED_BATCH\" = {bs}"};
  options.axis = {1, 2, 4};
  options.repeats = 2;
  options.progress = 0;
  std::set<std::pair<std::int64_t, int>> ended;
  options.trial_environment = [](std::int64_t batch, int) {
    return std::vector<std::pair<std::string, std::string>>{{"WATCHED_BATCH", std::to_string(batch)}};
  };
  options.trial_ended = [&](Row& row, std::int64_t batch, int repetition) {
    EXPECT_EQ(row.param_value("batch_size"), std::to_string(batch));
    ended.insert({batch, repetition});
    row.metric("gpu_idle_pct", static_cast<double>(batch));
  };
  const BatchSweepOutcome outcome = run_batch_sweep("hooks_test", options, Environment{});
  EXPECT_EQ(ended.size(), 6u);
  ASSERT_EQ(outcome.report.rows.size(), 6u);
  for (const Row& row : outcome.report.rows) {
    EXPECT_EQ(row.status, RowStatus::ok) << row.note;  // the variable reached every trial
    EXPECT_EQ(row.metric_value("gpu_idle_pct"), std::stod(*row.param_value("batch_size")));
  }
}

// A caller's own prediction of the largest fit (train_step_bench's memory
// model) is the one the bisection starts from: it was replaced by the fit of
// the trials' measured memory. Trials above 10 run out of memory.
TEST(BatchTrialHooks, TheCallersPredictionOfTheLargestFitIsUsed) {
  BatchSweepOptions options;
  options.command = {"sh", "-c",
                     "if [ {bs} -gt 10 ]; then echo 'torch.OutOfMemoryError: CUDA out of memory.' >&2; exit 1; fi"};
  options.axis = {1, 2, 4, 8, 16};
  options.progress = 0;
  options.sweep.bisect = true;
  int asked = 0;
  options.sweep.predict_largest_fit = [&]() -> std::optional<std::int64_t> {
    ++asked;
    return 10;
  };
  const BatchSweepOutcome outcome = run_batch_sweep("hooks_test", options, Environment{});
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(outcome.sweep.predicted_fit, 10);
  EXPECT_TRUE(outcome.sweep.prediction_used);
  EXPECT_EQ(outcome.sweep.largest_fit, 10);
}

// Trials run under the profiler carry its cost: their own configuration,
// never a regression of the unprofiled sweep's series, whose key stays.
TEST(BatchTrialHooks, AProfiledSweepIsAnotherConfiguration) {
  BatchSweepOptions options;
  options.command = {"train.py", "--bs", "{bs}"};
  const std::string plain = config_hash(options);
  options.profiled = true;
  EXPECT_NE(config_hash(options), plain);
}

}  // namespace
}  // namespace redline
