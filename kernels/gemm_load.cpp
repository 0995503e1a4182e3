#include "kernels/gemm_load.cuh"

#include <stdexcept>

#include "harness/core/clock.hpp"
#include "harness/core/units.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/gemm_lt.cuh"

namespace redline {
namespace {

constexpr std::int64_t kSize = 8192;
constexpr int kBatch = 8;  // GEMMs between checks of the clock and `stop`
// Long enough for the clocks to ramp up from idle and for cuBLASLt's first-run
// costs to be paid, so the "load alone" rate is the GPU at work.
constexpr double kWarmUpSeconds = 0.5;

}  // namespace

struct GemmLoad::State {
  cudaStream_t stream = nullptr;
  std::unique_ptr<LtGemm> gemm;
  // Recorded after each batch, alternately: rate() waits on the older one
  // while the newer batch keeps the GPU busy.
  cudaEvent_t batch_done[2] = {nullptr, nullptr};

  State() {
    REDLINE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    try {
      for (auto& event : batch_done) {
        cudaEvent_t created = nullptr;  // stored only on success
        REDLINE_CUDA_CHECK(cudaEventCreateWithFlags(&created, cudaEventDisableTiming));
        event = created;
      }
      GemmOptions options;
      options.dtype = GemmDtype::bf16;
      gemm = std::make_unique<LtGemm>(kSize, kSize, kSize, options, stream);
      const GemmCheck check = gemm->verify(0);
      if (!check.passed())
        throw GemmLoadWrong("the GEMM load failed its check: relative error " +
                            format_number(check.relative_error, 3) + ", " + std::to_string(check.nonfinite) +
                            " non-finite");
    } catch (...) {
      release();
      throw;
    }
  }
  ~State() { release(); }

  void release() noexcept {
    gemm.reset();
    for (auto event : batch_done)
      if (event) (void)cudaEventDestroy(event);
    (void)cudaStreamDestroy(stream);
  }
};

GemmLoad::GemmLoad() : state_(std::make_unique<State>()) { (void)rate(kWarmUpSeconds, {}); }
GemmLoad::~GemmLoad() = default;

double GemmLoad::rate(double seconds, const std::function<bool()>& stop) const {
  std::int64_t gemms = 0;
  int set = 0;
  int next = 0;  // batch_done slot of the next batch queued
  const auto queue_batch = [&] {
    for (int i = 0; i < kBatch; ++i) state_->gemm->enqueue(set++);
    REDLINE_CUDA_CHECK(cudaEventRecord(state_->batch_done[next], state_->stream));
    next ^= 1;
  };
  const double t0 = steady_seconds();
  double t = t0;
  try {
    // One batch always queued ahead of the one waited on: were the GPU left
    // idle while this thread wakes up and queues more, host CPU contention
    // (the persist's threads) would show as a GPU slowdown. A batch counts
    // once its event completes; the one still queued at the end does not.
    queue_batch();
    // Work first, then the check: a persist that finished before the first
    // check would otherwise leave a rate of 0, read as a 100% slowdown.
    do {
      queue_batch();
      // `next` now names the slot of the batch queued before this one.
      REDLINE_CUDA_CHECK(cudaEventSynchronize(state_->batch_done[next]));
      gemms += kBatch;
      t = steady_seconds();
    } while (stop ? !stop() : (t - t0 < seconds));
  } catch (...) {
    // Nothing of this call may still run on the GPU once it returns.
    (void)cudaStreamSynchronize(state_->stream);
    throw;
  }
  // Drain the batch queued ahead (not counted: it ran past `t`), so it does
  // not overlap the caller's next step or the next rate().
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(state_->stream));
  return t > t0 ? static_cast<double>(gemms) / (t - t0) : 0;
}

std::string GemmLoad::description() const { return "bf16 cuBLASLt GEMMs of 8192^3 back to back on the GPU"; }

}  // namespace redline
