// The GPU case runner: every single-process kernel microbenchmark's cases
// (kernels/runner/gpu_case.hpp) run through it. It owns Google Benchmark
// registration (so --benchmark_filter and _repetitions work; manual time from
// CUDA events, rates as counters), warm-up, the StreamBlocker and CUDA-event
// samples, the measurement policy, NVML clocks and throttle flags,
// verify-before-time, the statuses (ok, oom, error, skipped, wrong), NVTX
// ranges, progress lines and the rows.
#pragma once

#include <benchmark/benchmark.h>

#include <memory>
#include <optional>
#include <vector>

#include "harness/core/progress.hpp"
#include "harness/measure/measurement.hpp"
#include "harness/report/report.hpp"
#include "kernels/device_query.cuh"
#include "kernels/runner/gpu_case.hpp"

namespace redline {

struct CaseRunnerOptions {
  MeasurementPolicy policy;
  // The first case warms up at least this long, so clocks have ramped before
  // anything is timed; later cases use the policy's warm-up.
  double first_warmup_seconds = 1.0;
  // A timed sample is as many back-to-back calls as take about this long.
  double sample_seconds = 2e-3;
  int device = 0;
  // Whole batches are repeated this many times (--benchmark_repetitions):
  // redline repeats them itself, so Ctrl-C stops between repetitions and a
  // case that fails in one repetition cannot upset Google Benchmark's own.
  int repetitions = 1;
};

class CaseRunner {
 public:
  // Makes `options.device` current and creates the runner's stream there.
  // `forwards` receive Google Benchmark's reports too (its console or JSON
  // reporter for --benchmark_format, the one writing --benchmark_out).
  CaseRunner(CaseRunnerOptions options, const std::vector<benchmark::BenchmarkReporter*>& forwards,
             const Progress& progress);
  ~CaseRunner();
  CaseRunner(const CaseRunner&) = delete;
  CaseRunner& operator=(const CaseRunner&) = delete;

  // One row per case Google Benchmark ran (--benchmark_filter may drop
  // some) and repetition. Ctrl-C stops at the case being measured; the rows
  // so far come back. `policy` replaces the options' policy for these cases
  // (a sustained re-timing).
  std::vector<Row> run(const std::vector<std::unique_ptr<GpuCase>>& cases,
                       const std::optional<MeasurementPolicy>& policy = std::nullopt);
  // After the last run: the forwarded reporters finish their documents.
  void finish();

  const DeviceProperties& device() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// A case's failure as Google Benchmark's error text in the "<status>: <why>"
// form RowCollector reads: "oom: ..." when CUDA or cuBLAS(Lt) ran out of
// memory, "skipped: ..." for CaseSkipped, "error: ..." otherwise.
std::string failure_status_text(const std::exception& e);

}  // namespace redline
