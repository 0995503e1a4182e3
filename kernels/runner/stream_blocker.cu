// StreamBlocker: a one-thread kernel that polls a mapped pinned flag and
// watches %globaltimer for its timeout.
#include "kernels/runner/stream_blocker.cuh"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cuda_check.cuh"

namespace redline {
namespace {

constexpr int kReleaseWord = 0;
constexpr int kTimedOutWord = 1;
// Longer than any benchmark waits, and 1e6 s in nanoseconds still fits 64 bits.
constexpr double kMaxTimeoutSeconds = 1e6;

// %globaltimer is the device's nanosecond wall clock. clock64() would count SM
// cycles, whose length changes with the clock the benchmark must not assume.
__device__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Volatile accesses: each poll is a real load (the compiler may not keep the
// value in a register and loop on it), and PTX gives volatile global accesses
// relaxed system-scope semantics, which is what a flag the host writes needs.
__global__ void hold_until_released(const volatile int* release, volatile int* timed_out,
                                    unsigned long long timeout_ns) {
  const unsigned long long start = global_timer_ns();
  while (*release == 0) {
    if (global_timer_ns() - start >= timeout_ns) {
      *timed_out = 1;
      // Kernel completion makes the store visible anyway; the fence keeps it
      // ahead of anything the host could observe after this kernel.
      __threadfence_system();
      return;
    }
  }
}

}  // namespace

StreamBlocker::StreamBlocker() {
  // Mapped pinned memory is what both sides can touch while the kernel runs:
  // device memory could only be written by the host through a copy queued
  // behind the very kernel that waits for it.
  void* host = nullptr;
  REDLINE_CUDA_CHECK(cudaHostAlloc(&host, 2 * sizeof(int), cudaHostAllocMapped));
  try {
    void* device = nullptr;
    REDLINE_CUDA_CHECK(cudaHostGetDevicePointer(&device, host, 0));
    // No timing on this event: it only marks the end of a hold.
    REDLINE_CUDA_CHECK(cudaEventCreateWithFlags(&hold_ended_, cudaEventDisableTiming));
    auto* host_words = static_cast<int*>(host);
    auto* device_words = static_cast<int*>(device);
    release_host_ = host_words + kReleaseWord;
    timed_out_host_ = host_words + kTimedOutWord;
    release_device_ = device_words + kReleaseWord;
    timed_out_device_ = device_words + kTimedOutWord;
    // Nothing is held yet: a kernel would pass straight through.
    *release_host_ = 1;
    *timed_out_host_ = 0;
  } catch (...) {
    (void)cudaFreeHost(host);
    throw;
  }
}

StreamBlocker::~StreamBlocker() {
  release();
  // The kernel may not even have started (work ahead of it on its stream);
  // freeing the flags under it would make it read freed memory.
  (void)cudaEventSynchronize(hold_ended_);
  (void)cudaEventDestroy(hold_ended_);
  (void)cudaFreeHost(const_cast<int*>(release_host_ - kReleaseWord));
}

void StreamBlocker::block(cudaStream_t stream, double timeout_seconds) {
  if (!(timeout_seconds > 0) || !std::isfinite(timeout_seconds))
    throw std::invalid_argument("StreamBlocker::block: the timeout must be a positive number of seconds, got " +
                                std::to_string(timeout_seconds));
  if (held_)
    throw std::logic_error("StreamBlocker::block: the previous block() was not released; call release() first");
  // The previous hold was released, but its kernel may not have seen the flag
  // yet (or not started). Resetting the flag under it would hold it again, on
  // a stream nobody means to hold, and it could overwrite the new timed_out.
  REDLINE_CUDA_CHECK(cudaEventSynchronize(hold_ended_));
  // The flags are reset before the launch: a kernel launched first could read
  // the old "released" and pass straight through.
  *release_host_ = 0;
  *timed_out_host_ = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const auto timeout_ns =
      static_cast<unsigned long long>(std::min(timeout_seconds, kMaxTimeoutSeconds) * 1e9);
  hold_until_released<<<1, 1, 0, stream>>>(release_device_, timed_out_device_, timeout_ns);
  REDLINE_CUDA_CHECK_LAST();
  held_ = true;
  try {
    REDLINE_CUDA_CHECK(cudaEventRecord(hold_ended_, stream));
  } catch (...) {
    release();  // the caller never gets a hold it could release
    throw;
  }
}

void StreamBlocker::release() {
  // Storing 1 again is harmless, so calling this twice (or with nothing held)
  // is safe. The fence drains the store buffer: the kernel sees the flag now,
  // not whenever the CPU gets round to writing it back.
  *release_host_ = 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  held_ = false;
}

bool StreamBlocker::timed_out() const {
  // Until the kernel has ended, "not timed out" could still turn into "timed
  // out". An event never recorded (no block() yet) completes at once.
  REDLINE_CUDA_CHECK(cudaEventSynchronize(hold_ended_));
  return *timed_out_host_ != 0;
}

}  // namespace redline
