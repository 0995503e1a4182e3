// GPU side of the checkpoint benchmark: device -> host copies of the training state
// (pageable vs pinned host memory, 1/2/4 streams, against a plain cudaMemcpy
// loop ceiling), host -> device for restore, and the pinned snapshot that is
// the async save's only stall. The interface has no CUDA types, so the
// bench's main() stays plain C++.
#pragma once

#include <cstddef>
#include <memory>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace redline {

// std::nullopt when device 0 can run this binary's kernels, else why not.
std::optional<std::string> checkpoint_gpu_unavailable_reason();

// Thrown before allocating a state larger than the GPU's free memory.
class GpuStateTooLarge : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Whether `e` says the GPU or pinned host memory ran out (GpuStateTooLarge,
// or a CUDA out-of-memory error): the stage's status is then "oom".
bool is_gpu_out_of_memory(const std::exception& e);

// Thrown where a copy's destination differs from its source after the
// copy: a finding about the copy path (the stage's status is "wrong"), not
// a failure to run it.
class GpuCopyWrong : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct GpuCopyTiming {
  std::string stage;   // d2h, d2h_ceiling, h2d
  std::string memory;  // pageable, pinned
  int streams = 1;
  double seconds = 0;  // best of a few repetitions, host clock around the copies + synchronize
  std::string note;
  std::string wrong;  // empty, or why a repetition's copy failed its check (seconds is then 0)
};

// Allocates `bytes` on the device (random contents) and on the host, and
// times each copy variant, its destination cleared before and sampled after
// (outside the timing). A variant whose copy fails the check says so in its
// `wrong`, and the others still run. Throws CudaError (e.g. out of memory).
std::vector<GpuCopyTiming> measure_checkpoint_copies(std::size_t bytes);

// Restore's last step: the restored state (pageable host memory, where a
// read lands) copied to the GPU, timed, then copied back in slices and
// compared, so a copy that moved nothing cannot pass. Throws GpuCopyWrong
// naming the first differing byte.
double restore_to_gpu(const std::byte* host, std::size_t bytes);

// Device state of `bytes` random bytes and a pinned host snapshot of it.
class GpuSnapshot {
 public:
  explicit GpuSnapshot(std::size_t bytes);
  ~GpuSnapshot();
  GpuSnapshot(const GpuSnapshot&) = delete;
  GpuSnapshot& operator=(const GpuSnapshot&) = delete;
  // Copies the device state to the pinned snapshot on 4 streams; returns
  // seconds. The buffer is warm (one untimed copy, as a training job reuses
  // its snapshot buffer) and poisoned first; after the timed copy, samples
  // of the snapshot are checked against the device's random contents
  // (GpuCopyWrong when they differ).
  double snapshot();
  const std::byte* host() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace redline
