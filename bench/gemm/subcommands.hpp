// gemm_bench's subcommands, one file each: predict.cpp (the model alone, no
// GPU), and where the GPU case runner is built peak.cpp, sweep.cpp and
// model.cpp. Each returns the exit status.
#pragma once

#include "bench/gemm/flags.hpp"
#include "harness/report/report.hpp"

namespace redline {
struct BenchmarkArgs;
}

namespace redline::gemm {

int run_predict(const PredictFlags& f);

// The measuring subcommands: their shapes through the GPU case runner.
int run_peak(PeakFlags& f, const BenchmarkArgs& bench_args);
int run_sweep(SweepFlags& f, const BenchmarkArgs& bench_args);
int run_model(ModelFlags& f, const BenchmarkArgs& bench_args);

}  // namespace redline::gemm
