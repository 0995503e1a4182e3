// Evicts the previous iteration's data from L2 before timed work, so a
// benchmark whose working set fits in L2 measures memory, not the cache.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/device_buffer.cuh"

namespace redline {

// Why twice the L2 size: L2 is not a fully associative LRU cache. Addresses
// are hashed onto slices and sets, replacement is not strict LRU, and on
// Hopper/Blackwell the L2 is split into two partitions that may both hold a
// line. Writing exactly L2-size bytes can leave part of the old working set
// resident; writing twice that evicts it with near certainty, at the cost of
// a few more microseconds that are outside the timed region anyway.
class L2Flush {
 public:
  // Allocates on the current device, sized from its L2, once; flush() then
  // only writes.
  L2Flush();

  // Enqueues a write of the whole buffer on `stream`. Call it before starting
  // the timer, on the same stream as the timed work, so the work cannot
  // overlap it. Devices that report no L2 make this a no-op.
  void flush(cudaStream_t stream = nullptr);

  std::size_t l2_bytes() const noexcept { return l2_bytes_; }
  std::size_t buffer_bytes() const noexcept { return buffer_.bytes(); }

 private:
  std::size_t l2_bytes_ = 0;
  DeviceBuffer<unsigned char> buffer_;
};

}  // namespace redline
