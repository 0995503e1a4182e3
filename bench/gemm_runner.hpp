// gemm_bench's measuring engine: each GEMM shape (and each roofline kernel)
// is a Google Benchmark case, timed with CUDA events through the harness's
// measurement policy, verified against a reference, explained by the
// quantization model with the tile cuBLASLt really ran, and bracketed by NVML
// readings. RowCollector turns the runs into redline rows.
#pragma once

#include <benchmark/benchmark.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/report/gbench_rows.hpp"
#include "harness/gemm/gemm_dtype.hpp"
#include "harness/gemm/gemm_peak_search.hpp"
#include "harness/gemm/gpu_peaks.hpp"
#include "harness/measure/measurement.hpp"
#include "harness/core/progress.hpp"
#include "kernels/device_query.cuh"

namespace redline {

struct GemmCase {
  GemmSize size;
  GemmDtype dtype = GemmDtype::bf16;
  GemmLayout layout = GemmLayout::tn;
  // Parameters that name the case beyond dtype, layout and shape (layer and
  // pass for `model`); they become row parameters.
  std::vector<std::pair<std::string, std::string>> extra_params;
};

struct GemmRunnerOptions {
  MeasurementPolicy policy;
  // The first case warms up at least this long, so clocks have ramped before
  // anything is timed; later cases use the policy's warm-up.
  double first_warmup_seconds = 1.0;
  // Events resolve to about half a microsecond: a timed sample is as many
  // back-to-back GEMMs as take about this long.
  double sample_seconds = 2e-3;
  int heuristic_candidates = 1;
  // Datasheet ceilings; nullopt: percentages are not reported.
  std::optional<GpuPeaks> peaks;
  int device = 0;
  // Whole batches are repeated this many times (--benchmark_repetitions):
  // redline repeats them itself, so Ctrl-C stops between repetitions and a
  // case that fails in one repetition cannot upset Google Benchmark's own.
  int repetitions = 1;
};

class GemmRunner {
 public:
  // `forwards` receive Google Benchmark's reports too (its console/JSON
  // reporter for --benchmark_format, the one writing --benchmark_out).
  GemmRunner(GemmRunnerOptions options, std::vector<benchmark::BenchmarkReporter*> forwards,
             const Progress& progress);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // One row per case that Google Benchmark ran (--benchmark_filter may drop
  // some; --benchmark_repetitions repeats them). Ctrl-C stops at the case
  // being measured; the rows so far come back. `policy` replaces the
  // options' policy for these cases (peak's sustained re-timing).
  std::vector<Row> run(const std::vector<GemmCase>& cases,
                       const std::optional<MeasurementPolicy>& policy = std::nullopt);
  // The HBM copy and non-tensor FP32 FMA ceilings, as two rows.
  std::vector<Row> run_roofline();
  // After the last run: the forwarded reporters finish their documents.
  void finish();

  const DeviceProperties& device() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The name Google Benchmark shows and --benchmark_filter matches:
// "gemm/dtype:bf16/layout:tn/m:4096/n:4096/k:4096[/layer:qkv/pass:fwd]".
std::string gemm_case_name(const GemmCase& c);

}  // namespace redline
