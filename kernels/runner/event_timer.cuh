// Device-side timing of work on a stream with a pair of CUDA events: it
// measures when the GPU ran the work, not when the host enqueued it.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "kernels/cuda_check.cuh"

namespace redline {

// Usage: timer.start(s); <enqueue work on s>; timer.stop(s);
// double t = timer.elapsed_seconds();
// Events resolve to about half a microsecond, so time back-to-back batches of
// work rather than single short kernels.
class EventTimer {
 public:
  EventTimer() {
    REDLINE_CUDA_CHECK(cudaEventCreate(&start_));
    try {
      REDLINE_CUDA_CHECK(cudaEventCreate(&stop_));
    } catch (...) {
      (void)cudaEventDestroy(start_);
      throw;
    }
  }
  ~EventTimer() { release(); }

  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  EventTimer(EventTimer&& other) noexcept
      : start_(std::exchange(other.start_, nullptr)), stop_(std::exchange(other.stop_, nullptr)) {}
  EventTimer& operator=(EventTimer&& other) noexcept {
    if (this != &other) {
      release();
      start_ = std::exchange(other.start_, nullptr);
      stop_ = std::exchange(other.stop_, nullptr);
    }
    return *this;
  }

  void start(cudaStream_t stream = nullptr) { REDLINE_CUDA_CHECK(cudaEventRecord(start_, stream)); }
  void stop(cudaStream_t stream = nullptr) { REDLINE_CUDA_CHECK(cudaEventRecord(stop_, stream)); }

  // Blocks until the stop event has completed: the work must be finished
  // before its duration exists.
  double elapsed_seconds() const {
    REDLINE_CUDA_CHECK(cudaEventSynchronize(stop_));
    float milliseconds = 0.0f;
    REDLINE_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start_, stop_));
    return static_cast<double>(milliseconds) * 1e-3;
  }

 private:
  void release() noexcept {
    if (start_ != nullptr) (void)cudaEventDestroy(start_);
    if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
    start_ = nullptr;
    stop_ = nullptr;
  }

  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace redline
