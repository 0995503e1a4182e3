// The Google Benchmark reporter on real Google Benchmark runs (no mocks):
// benchmarks registered with RegisterBenchmark, run by RunSpecifiedBenchmarks
// into a RowCollector, read back as redline rows.
#include "harness/report/gbench_rows.hpp"

#include <benchmark/benchmark.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace redline;

namespace {

class GbenchRows : public ::testing::Test {
 protected:
  void SetUp() override { benchmark::ClearRegisteredBenchmarks(); }
  void TearDown() override { benchmark::ClearRegisteredBenchmarks(); }

  // Runs every registered benchmark into a fresh collector.
  std::vector<Row> run_all(benchmark::BenchmarkReporter* forward = nullptr) {
    RowCollector collector(forward);
    benchmark::RunSpecifiedBenchmarks(&collector);
    collector.finish();
    return collector.take_rows();
  }
};

const Row* find_row(const std::vector<Row>& rows, const std::string& key, int repetition = 0) {
  for (const auto& row : rows)
    if (row.case_key() == key && row.repetition == repetition) return &row;
  return nullptr;
}

TEST(GbenchCaseName, JoinsKeyValueSegments) {
  EXPECT_EQ(gbench_case_name("gemm", {{"dtype", "bf16"}, {"m", "4096"}}), "gemm/dtype:bf16/m:4096");
  EXPECT_EQ(gbench_case_name("fam", {{"a", "1"}, {"b", "x"}}), "fam/a:1/b:x");
  EXPECT_EQ(gbench_case_name("fam", {}), "fam");
}

TEST(GbenchCaseName, RejectsSeparatorsInKeysAndValues) {
  EXPECT_THROW(gbench_case_name("fam", {{"a/b", "1"}}), std::invalid_argument);
  EXPECT_THROW(gbench_case_name("fam", {{"a:b", "1"}}), std::invalid_argument);
  EXPECT_THROW(gbench_case_name("fam", {{"a", "1/2"}}), std::invalid_argument);
  EXPECT_THROW(gbench_case_name("fam", {{"a", "1:2"}}), std::invalid_argument);
  EXPECT_THROW(gbench_case_name("fam", {{"a", "1"}, {"b", "x:y"}}), std::invalid_argument);
}

TEST_F(GbenchRows, ManualTimeCountersAndLabelBecomeARow) {
  benchmark::RegisterBenchmark(gbench_case_name("fam", {{"a", "1"}, {"b", "x"}}).c_str(),
                               [](benchmark::State& state) {
                                 for (auto _ : state) state.SetIterationTime(0.002);
                                 state.counters["tflops"] = 5;
                                 state.counters["rel_error"] = 1e-4;
                                 state.SetLabel("tile 128x256");
                               })
      ->UseManualTime()
      ->Iterations(1);
  const auto rows = run_all();
  ASSERT_EQ(rows.size(), 1u);
  const Row& row = rows[0];
  EXPECT_EQ(row.case_key(), "a=1;b=x");
  ASSERT_EQ(row.params.size(), 2u);
  EXPECT_EQ(row.params[0], (std::pair<std::string, std::string>{"a", "1"}));
  EXPECT_EQ(row.params[1], (std::pair<std::string, std::string>{"b", "x"}));
  EXPECT_EQ(row.status, RowStatus::ok);
  EXPECT_EQ(row.note, "tile 128x256");
  EXPECT_EQ(row.repetition, 0);
  ASSERT_TRUE(row.metric_value("time_us"));
  EXPECT_DOUBLE_EQ(*row.metric_value("time_us"), 2000);  // the manual time, not the wall clock
  EXPECT_EQ(row.metric_value("tflops"), std::optional<double>(5));
  EXPECT_EQ(row.metric_value("rel_error"), std::optional<double>(1e-4));
}

TEST_F(GbenchRows, TimeIsPerIteration) {
  benchmark::RegisterBenchmark("fam/it:4", [](benchmark::State& state) {
    for (auto _ : state) state.SetIterationTime(0.002);
  })->UseManualTime()->Iterations(4);
  const auto rows = run_all();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(*rows[0].metric_value("time_us"), 2000);
}

TEST_F(GbenchRows, SkipWithErrorGivesTheStatusAndNote) {
  auto skip_with = [](const char* message) {
    return [message](benchmark::State& state) {
      state.SkipWithError(message);
      for (auto _ : state) state.SetIterationTime(0.002);
    };
  };
  for (const auto& [name, message] : std::vector<std::pair<std::string, const char*>>{
           {gbench_case_name("fam", {{"case", "oom"}}), "oom: too big"},
           {gbench_case_name("fam", {{"case", "error"}}), "error: fp8 needs tn"},
           {gbench_case_name("fam", {{"case", "skipped"}}), "skipped: interrupted"},
           {gbench_case_name("fam", {{"case", "wrong"}}), "wrong: mismatch"},
           {gbench_case_name("fam", {{"case", "other"}}), "cudaMalloc failed"}})
    benchmark::RegisterBenchmark(name.c_str(), skip_with(message))->UseManualTime()->Iterations(1);
  const auto rows = run_all();
  ASSERT_EQ(rows.size(), 5u);
  struct Want {
    const char* key;
    const char* status;
    const char* note;
  };
  for (const Want& want : {Want{"case=oom", "oom", "too big"}, Want{"case=error", "error", "fp8 needs tn"},
                           Want{"case=skipped", "skipped", "interrupted"}, Want{"case=wrong", "wrong", "mismatch"},
                           Want{"case=other", "error", "cudaMalloc failed"}}) {
    const Row* row = find_row(rows, want.key);
    ASSERT_NE(row, nullptr) << want.key;
    EXPECT_EQ(to_string(row->status), want.status) << want.key;
    EXPECT_EQ(row->note, want.note) << want.key;
    EXPECT_FALSE(row->metric_value("tflops")) << want.key;
  }
}

TEST_F(GbenchRows, AWrongCounterMakesTheRowWrong) {
  benchmark::RegisterBenchmark("fam/case:bad", [](benchmark::State& state) {
    for (auto _ : state) state.SetIterationTime(0.002);
    state.counters["tflops"] = 5;
    state.counters["wrong"] = 1;
    state.SetLabel("verification failed");
  })->UseManualTime()->Iterations(1);
  benchmark::RegisterBenchmark("fam/case:good", [](benchmark::State& state) {
    for (auto _ : state) state.SetIterationTime(0.002);
    state.counters["wrong"] = 0;
  })->UseManualTime()->Iterations(1);
  const auto rows = run_all();
  ASSERT_EQ(rows.size(), 2u);
  const Row* bad = find_row(rows, "case=bad");
  const Row* good = find_row(rows, "case=good");
  ASSERT_TRUE(bad && good);
  EXPECT_EQ(bad->status, RowStatus::wrong);
  EXPECT_EQ(bad->note, "verification failed");
  EXPECT_EQ(bad->metric_value("wrong"), std::optional<double>(1));
  EXPECT_EQ(bad->metric_value("tflops"), std::optional<double>(5));
  EXPECT_EQ(good->status, RowStatus::ok);
  EXPECT_EQ(good->metric_value("wrong"), std::optional<double>(0));
}

// Each repetition takes 1, 2, 3 ms in turn.
benchmark::internal::Benchmark* register_repeated(const std::string& name) {
  return benchmark::RegisterBenchmark(name.c_str(), [](benchmark::State& state) {
           static int run = 0;
           const double seconds = 0.001 * (run++ % 3 + 1);
           for (auto _ : state) state.SetIterationTime(seconds);
           state.counters["tflops"] = 5;
         })
      ->UseManualTime()
      ->Iterations(1)
      ->Repetitions(3);
}

TEST_F(GbenchRows, RepetitionsGiveOneRowEach) {
  register_repeated(gbench_case_name("fam", {{"a", "1"}, {"b", "x"}}));
  const auto rows = run_all();
  ASSERT_EQ(rows.size(), 3u);  // aggregates (mean, median, stddev, cv) are no rows
  for (int rep = 0; rep < 3; ++rep) {
    EXPECT_EQ(rows[rep].case_key(), "a=1;b=x");
    EXPECT_EQ(rows[rep].repetition, rep);
    EXPECT_EQ(rows[rep].status, RowStatus::ok);
    EXPECT_DOUBLE_EQ(*rows[rep].metric_value("time_us"), 1000.0 * (rep + 1));
    EXPECT_EQ(rows[rep].metric_value("tflops"), std::optional<double>(5));
  }
}

TEST_F(GbenchRows, WithAggregatesOnlyTheMedianStandsIn) {
  register_repeated(gbench_case_name("fam", {{"a", "2"}}))->ReportAggregatesOnly(true);
  const auto rows = run_all();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].case_key(), "a=2");
  EXPECT_EQ(rows[0].status, RowStatus::ok);
  EXPECT_EQ(rows[0].repetition, 0);
  EXPECT_DOUBLE_EQ(*rows[0].metric_value("time_us"), 2000);  // median of 1, 2, 3 ms
  EXPECT_EQ(rows[0].metric_value("tflops"), std::optional<double>(5));
}

TEST_F(GbenchRows, TakeRowsClears) {
  benchmark::RegisterBenchmark("fam/a:1", [](benchmark::State& state) {
    for (auto _ : state) state.SetIterationTime(0.002);
  })->UseManualTime()->Iterations(1);
  RowCollector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  EXPECT_EQ(collector.take_rows().size(), 1u);
  EXPECT_TRUE(collector.take_rows().empty());
}

class CountingReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override {
    ++contexts;
    return true;
  }
  void ReportRuns(const std::vector<Run>& runs) override { this->runs += static_cast<int>(runs.size()); }
  void Finalize() override { ++finalized; }
  int contexts = 0, runs = 0, finalized = 0;
};

TEST_F(GbenchRows, ForwardsEveryCallToAnotherReporter) {
  benchmark::RegisterBenchmark("fam/a:1", [](benchmark::State& state) {
    for (auto _ : state) state.SetIterationTime(0.002);
  })->UseManualTime()->Iterations(1);
  benchmark::RegisterBenchmark("fam/a:2", [](benchmark::State& state) {
    for (auto _ : state) state.SetIterationTime(0.002);
  })->UseManualTime()->Iterations(1);
  CountingReporter forward;
  const auto rows = run_all(&forward);
  EXPECT_EQ(rows.size(), 2u);
  EXPECT_EQ(forward.contexts, 1);
  EXPECT_EQ(forward.runs, 2);
  EXPECT_EQ(forward.finalized, 1);
}

// A tool that runs several batches (and repeats them itself) still gives its
// forwarded reporters one run: one context, every run, one Finalize.
TEST_F(GbenchRows, SeveralBatchesReachForwardsAsOneRun) {
  CountingReporter forward;
  RowCollector collector(&forward);
  for (int repetition = 0; repetition < 3; ++repetition) {
    benchmark::RegisterBenchmark("fam/a:1", [](benchmark::State& state) {
      for (auto _ : state) state.SetIterationTime(0.002);
    })->UseManualTime()->Iterations(1);
    collector.set_repetition(repetition, 3);
    benchmark::RunSpecifiedBenchmarks(&collector);
    benchmark::ClearRegisteredBenchmarks();
  }
  EXPECT_EQ(forward.contexts, 1);
  EXPECT_EQ(forward.runs, 3);
  EXPECT_EQ(forward.finalized, 0) << "Finalize waits for finish()";
  collector.finish();
  collector.finish();
  EXPECT_EQ(forward.finalized, 1);
  const auto rows = collector.take_rows();
  ASSERT_EQ(rows.size(), 3u);
  for (int repetition = 0; repetition < 3; ++repetition) {
    EXPECT_EQ(rows[repetition].repetition, repetition);
    EXPECT_EQ(rows[repetition].case_key(), "a=1");
  }
}

// The JSON that --benchmark_format=json prints stays one valid document
// across batches.
TEST_F(GbenchRows, JsonForwardStaysOneDocumentAcrossBatches) {
  std::ostringstream out, err;
  benchmark::JSONReporter json;
  json.SetOutputStream(&out);
  json.SetErrorStream(&err);
  RowCollector collector(&json);
  for (int batch = 0; batch < 2; ++batch) {
    benchmark::RegisterBenchmark(("fam/a:" + std::to_string(batch)).c_str(), [](benchmark::State& state) {
      for (auto _ : state) state.SetIterationTime(0.002);
    })->UseManualTime()->Iterations(1);
    benchmark::RunSpecifiedBenchmarks(&collector);
    benchmark::ClearRegisteredBenchmarks();
  }
  collector.finish();
  const std::string text = out.str();
  EXPECT_EQ(text.find("\"context\""), text.rfind("\"context\"")) << "one context: " << text;
  EXPECT_EQ(text.find("[\n,"), std::string::npos) << "no empty first element: " << text;
  EXPECT_NE(text.find("fam/a:0"), std::string::npos);
  EXPECT_NE(text.find("fam/a:1"), std::string::npos);
  const auto last = text.find_last_not_of(" \n");
  ASSERT_NE(last, std::string::npos);
  EXPECT_EQ(text[last], '}') << text;
}

class IndexReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) seen.emplace_back(run.repetition_index, run.repetitions);
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> seen;
};

// Repetitions the tool runs itself reach Google Benchmark's reporters with
// their index and count, as its own repetitions would.
TEST_F(GbenchRows, ForwardedRunsCarryTheToolsRepetitionIndex) {
  IndexReporter forward;
  RowCollector collector(&forward);
  for (int repetition = 0; repetition < 2; ++repetition) {
    benchmark::RegisterBenchmark("fam/a:1", [](benchmark::State& state) {
      for (auto _ : state) state.SetIterationTime(0.002);
    })->UseManualTime()->Iterations(1);
    collector.set_repetition(repetition, 2);
    benchmark::RunSpecifiedBenchmarks(&collector);
    benchmark::ClearRegisteredBenchmarks();
  }
  ASSERT_EQ(forward.seen.size(), 2u);
  EXPECT_EQ(forward.seen[0], std::make_pair(std::int64_t{0}, std::int64_t{2}));
  EXPECT_EQ(forward.seen[1], std::make_pair(std::int64_t{1}, std::int64_t{2}));
}

// A run where nothing ran (a filter that matches nothing) still closes a
// whole JSON document.
TEST_F(GbenchRows, FinishWithoutAnyBatchStillGivesAWholeJsonDocument) {
  std::ostringstream out, err;
  benchmark::JSONReporter json;
  json.SetOutputStream(&out);
  json.SetErrorStream(&err);
  RowCollector collector(&json);
  collector.finish();
  const std::string text = out.str();
  EXPECT_NE(text.find("\"context\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"benchmarks\""), std::string::npos) << text;
  const auto last = text.find_last_not_of(" \n");
  ASSERT_NE(last, std::string::npos);
  EXPECT_EQ(text[last], '}') << text;
}

}  // namespace
