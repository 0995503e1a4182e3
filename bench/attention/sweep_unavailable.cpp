// attention_bench sweep where the GPU attention paths are not built (no CUDA,
// cuBLASLt or Google Benchmark): the sweep cannot run here, exit 77; plan
// still runs.
#include "bench/attention/subcommands.hpp"
#include "bench/attention/sweep_flags.hpp"
#include "harness/core/usage_error.hpp"

namespace redline::attention {

int run_sweep(const SweepFlags& f, const BenchmarkArgs*) {
  // Bad input is still bad input (exit 2) before "cannot run" (exit 77).
  checked_sweep(f);
  throw CannotRun("this attention_bench was built without CUDA, cuBLASLt or Google Benchmark; only plan runs");
}

}  // namespace redline::attention
