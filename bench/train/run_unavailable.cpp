// train_step_bench run where the CUDA training stack is not built: its flags
// are still checked (exit 2), then it cannot run here (exit 77); memory runs.
#include "bench/train/step_flags.hpp"
#include "harness/core/usage_error.hpp"

namespace redline::train {

void require_training_gpu(int) {
  throw CannotRun("this train_step_bench was built without CUDA, cuBLASLt or cuDNN; only memory runs");
}

int run_step(const RunFlags& f) {
  require_training_gpu(checked_run(f).device);
  return kExitOk;
}

}  // namespace redline::train
