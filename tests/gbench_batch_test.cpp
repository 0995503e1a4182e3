// run_gbench_batch on real Google Benchmark runs: registration (manual time,
// one iteration, microseconds), --benchmark_filter, whole-batch repetitions,
// Ctrl-C, and an empty registry after each batch.
#include "harness/report/gbench_batch.hpp"

#include <benchmark/benchmark.h>
#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/core/interrupt.hpp"
#include "support.hpp"

using namespace redline;

namespace {

class GbenchBatch : public ::testing::Test {
 protected:
  void SetUp() override { benchmark::ClearRegisteredBenchmarks(); }
  void TearDown() override {
    benchmark::SetBenchmarkFilter("");
    set_interrupted_for_testing(false);
  }

  // A case that reports `seconds` as its time and counts its runs.
  GbenchCase timed_case(const std::string& name, double seconds) {
    return {name, [this, seconds](benchmark::State& state) {
              ++runs_;
              iterations_seen_.push_back(state.max_iterations);
              for (auto _ : state) state.SetIterationTime(seconds);
            }};
  }

  int runs_ = 0;
  std::vector<benchmark::IterationCount> iterations_seen_;
};

TEST_F(GbenchBatch, EachCaseRunsOnceWithManualTimeInMicroseconds) {
  std::ostringstream json;
  benchmark::JSONReporter reporter;
  reporter.SetOutputStream(&json);
  reporter.SetErrorStream(&json);
  RowCollector collector(&reporter);
  const std::vector<Row> rows =
      run_gbench_batch(collector, {timed_case("fam/a:1", 0.002), timed_case("fam/a:2", 0.004)}, 1);
  collector.finish();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].case_key(), "a=1");
  EXPECT_DOUBLE_EQ(*rows[0].metric_value("time_us"), 2000);
  EXPECT_DOUBLE_EQ(*rows[1].metric_value("time_us"), 4000);
  EXPECT_EQ(runs_, 2);
  EXPECT_EQ(iterations_seen_, (std::vector<benchmark::IterationCount>{1, 1}));
  EXPECT_CONTAINS(json.str(), "\"name\": \"fam/a:1/iterations:1/manual_time\"");
  EXPECT_CONTAINS(json.str(), "\"time_unit\": \"us\"");
}

TEST_F(GbenchBatch, TheFilterRunsOnlyWhatMatches) {
  benchmark::SetBenchmarkFilter("a:2");
  RowCollector collector;
  const std::vector<Row> rows =
      run_gbench_batch(collector, {timed_case("fam/a:1", 0.002), timed_case("fam/a:2", 0.004)}, 1);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].case_key(), "a=2");
  EXPECT_EQ(runs_, 1);
}

TEST_F(GbenchBatch, RepetitionsRepeatTheWholeBatchInOrder) {
  RowCollector collector;
  const std::vector<Row> rows =
      run_gbench_batch(collector, {timed_case("fam/a:1", 0.002), timed_case("fam/a:2", 0.004)}, 3);
  ASSERT_EQ(rows.size(), 6u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].repetition, static_cast<int>(i / 2)) << i;
    EXPECT_EQ(rows[i].case_key(), i % 2 == 0 ? "a=1" : "a=2") << i;
  }
}

TEST_F(GbenchBatch, AfterCtrlCCasesAreSkippedAndNoMoreRepetitionsRun) {
  RowCollector collector;
  GbenchCase stop = {"fam/a:1", [this](benchmark::State& state) {
                       ++runs_;
                       for (auto _ : state) state.SetIterationTime(0.001);
                       set_interrupted_for_testing(true);
                     }};
  const std::vector<Row> rows = run_gbench_batch(collector, {stop, timed_case("fam/a:2", 0.004)}, 3);
  ASSERT_EQ(rows.size(), 2u) << "one repetition only";
  EXPECT_EQ(rows[0].status, RowStatus::ok);
  EXPECT_EQ(rows[1].status, RowStatus::skipped);
  EXPECT_EQ(rows[1].note, "interrupted");
  EXPECT_EQ(runs_, 1) << "the case after Ctrl-C never ran";
}

TEST_F(GbenchBatch, TheRegistryIsEmptyAfterABatch) {
  RowCollector collector;
  run_gbench_batch(collector, {timed_case("fam/a:1", 0.002)}, 1);
  const std::vector<Row> second = run_gbench_batch(collector, {timed_case("fam/a:2", 0.004)}, 1);
  ASSERT_EQ(second.size(), 1u) << "the first batch's case did not run again";
  EXPECT_EQ(second[0].case_key(), "a=2");
  EXPECT_TRUE(run_gbench_batch(collector, {}, 2).empty());
}

// A batch that throws leaves nothing registered: its lambdas refer to cases
// that are gone by the next batch, which must not run them.
TEST_F(GbenchBatch, TheRegistryIsEmptyAfterABatchThatThrew) {
  RowCollector collector;
  const GbenchCase throws{"fam/a:1", [](benchmark::State&) { throw std::runtime_error("a case that throws"); }};
  EXPECT_THROW(run_gbench_batch(collector, {throws}, 1), std::runtime_error);
  (void)collector.take_rows();
  const std::vector<Row> next = run_gbench_batch(collector, {timed_case("fam/a:2", 0.004)}, 1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].case_key(), "a=2");
}

}  // namespace
