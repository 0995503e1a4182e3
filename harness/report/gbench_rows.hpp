// The harness reporter of the Google Benchmark runner (DESIGN: two runners,
// one set of reporters): it receives Google Benchmark's runs and turns each
// into a redline Row, so kernel microbenchmarks get the same console table,
// CSV, JSON and saturation analysis as every other tool.
//
// Conventions a benchmark follows so its runs read back as rows:
//   * its name is gbench_case_name(family, params): "gemm/dtype:bf16/m:4096";
//     every "key:value" segment becomes a parameter, in order;
//   * it uses manual time (seconds of one operation, from CUDA events): the
//     run's time becomes the time_us metric;
//   * every counter becomes a metric of the same name, so counter names carry
//     their unit (tflops, hbm_GBps, rel_error) and appear in results/SCHEMA.md;
//   * SkipWithError("<status>: <why>") with status oom, error, skipped or
//     wrong gives a row of that status and note; other messages give error;
//   * a counter "wrong" above zero makes the row's status wrong;
//   * the label becomes the row's note.
// Aggregates (--benchmark_repetitions) are left to Google Benchmark's own
// reporters, except that with --benchmark_report_aggregates_only the median
// stands in for the repetitions it replaces.
#pragma once

#include <benchmark/benchmark.h>

#include <string>
#include <utility>
#include <vector>

#include "harness/report/report.hpp"

namespace redline {

// "gemm" + {{"dtype","bf16"},{"m","4096"}} -> "gemm/dtype:bf16/m:4096".
// Throws std::invalid_argument if a key or value contains '/' or ':'.
std::string gbench_case_name(const std::string& family,
                             const std::vector<std::pair<std::string, std::string>>& params);

Row row_from_gbench_run(const benchmark::BenchmarkReporter::Run& run);

// Google Benchmark may run several batches into one collector (a search
// whose next shapes depend on the last ones; whole repetitions run by the
// tool). Forwarded reporters see them as one run: ReportContext once, every
// run, and Finalize once, from finish(), so a JSON document stays whole.
class RowCollector : public benchmark::BenchmarkReporter {
 public:
  // `forward`, when given, also receives the runs (Google Benchmark's own
  // console/JSON reporter, when the user asked for --benchmark_format).
  explicit RowCollector(benchmark::BenchmarkReporter* forward = nullptr);

  // One more reporter to forward to (e.g. the one writing --benchmark_out).
  void add_forward(benchmark::BenchmarkReporter* reporter);
  // The runs that follow are repetition `repetition` of `repetitions`, when
  // the tool, not Google Benchmark, repeats a batch: rows get the index, and
  // the forwarded runs say it too, so compare.py tells repetitions apart.
  void set_repetition(int repetition, int repetitions);

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;  // a batch ended: nothing is forwarded (see finish)
  // The whole run ended: forwards Finalize once (and a context first when no
  // batch ran, so a JSON document is never left empty).
  void finish();

  // The rows collected so far, in the order the runs finished; clears them.
  std::vector<Row> take_rows();

 private:
  std::vector<benchmark::BenchmarkReporter*> forwards_;
  bool context_sent_ = false, finished_ = false;
  int repetition_ = 0, repetitions_ = 1;
  std::vector<Row> rows_;
  std::vector<Row> medians_;  // aggregate medians, used where no iteration run came
};

}  // namespace redline
