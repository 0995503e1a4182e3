// attention_bench's subcommands, one file each: plan.cpp (the model alone,
// no GPU) and, where the GPU attention paths are built, sweep.cpp. Each
// returns the exit status.
#pragma once

#include "bench/attention/layout_flags.hpp"
#include "harness/measure/policy_flags.hpp"
#include "harness/report/output.hpp"

namespace redline {
struct BenchmarkArgs;
}

namespace redline::attention {

struct PlanFlags {
  LayoutFlags layout;
  OutputOptions output;
};

struct SweepFlags {
  LayoutFlags layout;
  std::string path = "all", direction = "fwd,bwd", device = "0", first_warmup = "1";
  PolicyFlags policy;
  bool progress = false;
  bool unfused_gemms = false;
  OutputOptions output;
};

int run_plan(const PlanFlags& f);
// bench_args: the --benchmark_* flags; nullptr where Google Benchmark is not
// built (then the sweep cannot run: CannotRun, exit 77).
int run_sweep(const SweepFlags& f, const BenchmarkArgs* bench_args);

}  // namespace redline::attention
