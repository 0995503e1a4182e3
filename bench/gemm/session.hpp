// What every measuring subcommand of gemm_bench starts with (the flags
// checked, a usable GPU, the report with the environment, Google
// Benchmark's reports, the case runner) and ends with (every report written,
// the exit status).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "bench/gemm/flags.hpp"
#include "bench/gemm/gemm_case.hpp"
#include "harness/core/progress.hpp"
#include "harness/measure/measurement.hpp"
#include "harness/report/gbench_args.hpp"
#include "harness/report/gbench_output.hpp"
#include "harness/report/report.hpp"
#include "kernels/runner/case_runner.hpp"

namespace redline::gemm {

struct Session {
  Report report;
  OutputOptions output;
  std::unique_ptr<GoogleBenchmarkReports> google;  // --benchmark_format, --benchmark_out
  std::unique_ptr<Progress> progress;
  std::unique_ptr<CaseRunner> runner;
  std::vector<GemmDtype> dtypes;  // those this GPU runs; the others are skipped rows
  GemmLayout layout = GemmLayout::tn;
  MeasurementPolicy policy;  // from the flags
  GemmCaseOptions gemm_options;

  // The GEMM cases of `specs`, through the runner; `policy` replaces the
  // flags' policy for them.
  std::vector<Row> run(const std::vector<GemmCaseSpec>& specs,
                       const std::optional<MeasurementPolicy>& policy = std::nullopt);
  // The HBM copy and non-tensor FP32 FMA ceilings, as two rows.
  std::vector<Row> run_roofline();
};

// Checks every flag (UsageError, exit 2) before it looks for a GPU (CannotRun,
// exit 77). `shapes`: the shapes the run will measure, known before it starts.
Session start_session(MeasureFlags& f, const BenchmarkArgs& bench_args, const std::vector<GemmSize>& shapes);

// Finishes Google Benchmark's documents, writes every report, and returns the
// exit status: 1 when any result failed verification, or when GEMM rows
// exist and none of them ran ok; 130 after Ctrl-C.
int finish_session(Session& s);

}  // namespace redline::gemm
