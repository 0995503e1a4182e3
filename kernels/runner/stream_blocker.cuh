// StreamBlocker: holds a stream behind a spinning kernel until the host has
// enqueued a whole timed batch. Without it, events around back-to-back short
// kernels (a 5 us GEMM) time the host's launch rate: the GPU drains the queue
// faster than the host fills it. With it the GPU finds start event, work and
// stop event all queued when the hold ends (nvbench's "blocking kernel").
#pragma once

#include <cuda_runtime_api.h>

namespace redline {

// Usage, on streams of the device that was current at construction:
//   blocker.block(s);
//   timer.start(s); <enqueue the batch on s>; timer.stop(s);
//   blocker.release();
//   double t = timer.elapsed_seconds();
//   if (blocker.timed_out()) <report the point as not measured, do not trust t>
//
// The batch must fit the device's launch queue (on the order of a thousand
// launches): past it, the host's next launch waits for queue space that the
// held stream never frees, until the timeout ends the hold. timed_out() then
// says so.
//
// Not thread-safe: block() and release() are called from one host thread.
class StreamBlocker {
 public:
  // Allocates the mapped pinned flags and the event that marks the end of a
  // hold. Throws CudaError.
  StreamBlocker();
  // Releases a hold still in place and waits for its kernel to end, so the
  // kernel never reads freed memory.
  ~StreamBlocker();
  StreamBlocker(const StreamBlocker&) = delete;
  StreamBlocker& operator=(const StreamBlocker&) = delete;

  // Enqueues the spinning kernel (one thread) on `stream`. It ends when
  // release() is called or after `timeout_seconds` of device time, and then
  // records which of the two happened. Each block() needs its release()
  // before the next block() (std::logic_error otherwise); timeout_seconds must
  // be positive and finite (std::invalid_argument otherwise).
  void block(cudaStream_t stream, double timeout_seconds = 10.0);

  // Lets the held kernel end. Idempotent; a no-op without a hold.
  void release();

  // True when the last block() ended by timeout rather than by release(): the
  // batch was then NOT all queued when timing began, and its time is the
  // host's launch rate again. Waits for the last hold's kernel to end, so the
  // answer is final (call it after release(), or it waits out the timeout).
  bool timed_out() const;

 private:
  // Mapped pinned memory: the host writes release_, the kernel polls it over
  // the bus; the kernel writes timed_out_ for the host to read.
  volatile int* release_host_ = nullptr;
  volatile int* timed_out_host_ = nullptr;
  int* release_device_ = nullptr;
  int* timed_out_device_ = nullptr;
  cudaEvent_t hold_ended_ = nullptr;  // recorded right after the kernel
  bool held_ = false;                 // block() called, release() not yet
};

}  // namespace redline
