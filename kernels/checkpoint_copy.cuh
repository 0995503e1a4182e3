// GPU side of checkpoint_bench: device -> host copies of the training state
// (pageable vs pinned host memory, 1/2/4 streams, against a plain cudaMemcpy
// loop ceiling), host -> device for restore, and the pinned snapshot that is
// the async save's only stall. The interface has no CUDA types, so the
// bench's main() stays plain C++.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redline {

// std::nullopt when device 0 can run this binary's kernels, else why not.
std::optional<std::string> checkpoint_gpu_unavailable_reason();

struct GpuCopyTiming {
  std::string stage;   // d2h, d2h_ceiling, h2d
  std::string memory;  // pageable, pinned
  int streams = 1;
  double seconds = 0;  // best of a few repetitions, host clock around the copies + synchronize
  std::string note;
};

// Allocates `bytes` on the device (random contents) and on the host, and
// times each copy variant. Throws CudaError (e.g. out of memory).
std::vector<GpuCopyTiming> measure_checkpoint_copies(std::size_t bytes);

// Device state of `bytes` random bytes and a pinned host snapshot of it.
class GpuSnapshot {
 public:
  explicit GpuSnapshot(std::size_t bytes);
  ~GpuSnapshot();
  GpuSnapshot(const GpuSnapshot&) = delete;
  GpuSnapshot& operator=(const GpuSnapshot&) = delete;
  // Copies the device state to the pinned snapshot on 4 streams; returns seconds.
  double snapshot();
  const std::byte* host() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace redline
