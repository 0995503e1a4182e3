#include "kernels/checkpoint_copy.cuh"

#include <algorithm>
#include <functional>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <limits>
#include <string>
#include <vector>

#include "harness/core/clock.hpp"
#include "harness/measure/measurement.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"
#include "kernels/gpu_availability.cuh"
#include "kernels/random_fill.cuh"

namespace redline {
namespace {

class Streams {
 public:
  explicit Streams(int n) : streams_(static_cast<std::size_t>(n), nullptr) {
    // A constructor that throws gets no destructor call: destroy the streams
    // already made here, or a failed k-th create leaks the first k.
    try {
      for (auto& s : streams_) {
        // Stored only on success: a failed call's output is unspecified.
        cudaStream_t created = nullptr;
        REDLINE_CUDA_CHECK(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
        s = created;
      }
    } catch (...) {
      destroy();
      throw;
    }
  }
  ~Streams() { destroy(); }
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;
  cudaStream_t operator[](std::size_t i) const { return streams_[i]; }
  int size() const { return static_cast<int>(streams_.size()); }

 private:
  // Slots whose stream was not created are still null.
  void destroy() noexcept {
    for (auto s : streams_)
      if (s) (void)cudaStreamDestroy(s);
  }

  std::vector<cudaStream_t> streams_;
};

// The copy split into equal slices, one per stream; host clock around the
// enqueue and the final synchronize (pageable copies block while enqueued).
double split_copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, const Streams& streams) {
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
  const double t0 = steady_seconds();
  const std::size_t n = static_cast<std::size_t>(streams.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t begin = bytes * i / n, end = bytes * (i + 1) / n;
    REDLINE_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin,
                                       end - begin, kind, streams[i]));
  }
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
  return steady_seconds() - t0;
}

// The fastest of `repetitions` timed copies after one untimed one (first
// touch of host pages, lazy context work), sampled by the harness's one
// policy for wall-clock samples. All of them even at Ctrl-C: a stage is a
// few copies of seconds at most, and a figure needs its samples.
double best_of(int repetitions, const std::function<double()>& run) {
  MeasurementPolicy policy = fixed_count_policy(repetitions);
  policy.warmup_iterations = 1;
  policy.stops_on_interrupt = false;
  return measure(policy, run).summary.min;
}

constexpr std::uint64_t kStateSeed = 0xC0FFEEull;

void fill_device(DeviceBuffer<float>& device) {
  random_fill(device.data(), device.size(), kStateSeed);
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
}

// Samples spread over the whole state, the slices of every stream included,
// compared with fill_device's random contents (uniform in [-1, 1), so a
// cleared destination that a copy left untouched fails). `element(i)` reads a
// copy's element i. Throws GpuCopyWrong naming `what`.
constexpr std::size_t kSamples = 4096;
std::size_t sample_index(std::size_t count, std::size_t s) { return (count - 1) * s / (kSamples - 1); }

void check_state_samples(std::size_t count, const std::function<float(std::size_t)>& element,
                         const std::string& what) {
  for (std::size_t s = 0; s < kSamples && count > 0; ++s) {
    const std::size_t i = sample_index(count, s);
    if (element(i) != random_value_at<float>(kStateSeed, i))
      throw GpuCopyWrong(what + " element " + std::to_string(i) + " differs from the device state after the copy");
  }
}

// The sampled elements zeroed, so that a copy that leaves them fails the check.
void clear_host_samples(std::byte* host, std::size_t count) {
  auto* floats = reinterpret_cast<float*>(host);
  for (std::size_t s = 0; s < kSamples && count > 0; ++s) floats[sample_index(count, s)] = 0.0f;
}

void check_host_copy(const std::byte* host, std::size_t count, const std::string& what) {
  const auto* floats = reinterpret_cast<const float*>(host);
  check_state_samples(count, [&](std::size_t i) { return floats[i]; }, what);
}

// Only the sampled elements come back, one at a time: a few thousand small
// copies instead of the whole state again.
void check_device_copy(const DeviceBuffer<float>& device, const std::string& what) {
  check_state_samples(
      device.size(),
      [&](std::size_t i) {
        float value = 0;
        REDLINE_CUDA_CHECK(cudaMemcpy(&value, device.data() + i, sizeof value, cudaMemcpyDeviceToHost));
        return value;
      },
      what);
}

// A failed check names the variant as its row does.
std::string copy_name(const char* stage, const char* memory, int streams) {
  return std::string("gpu.") + stage + " (" + memory + ", " + std::to_string(streams) + " stream(s))";
}

// One repetition of a timed copy, its destination cleared before and
// checked after, both outside the copy's own clock: every repetition
// best_of takes (its warm-up and each timed one) must have moved the state.
template <typename Copy, typename Clear, typename Check>
auto verified(Copy copy, Clear clear, Check check) {
  return [=] {
    clear();
    const double seconds = copy();
    check();
    return seconds;
  };
}

// The variant `t` timed by best_of over `repetition`, or, where a
// repetition's copy fails its check, said wrong: that variant's finding,
// and the other variants still run.
GpuCopyTiming timed_variant(GpuCopyTiming t, const std::function<double()>& repetition) {
  constexpr int kRepetitions = 3;
  try {
    t.seconds = best_of(kRepetitions, repetition);
  } catch (const GpuCopyWrong& e) {
    t.wrong = e.what();
  }
  return t;
}

// A state that cannot fit is said so, with the sizes, before cudaMalloc's
// bare "out of memory".
void require_free_gpu_memory(std::size_t bytes) {
  std::size_t free = 0, total = 0;
  REDLINE_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  if (bytes > free)
    throw GpuStateTooLarge("a state of " + std::to_string(bytes) + " bytes does not fit the GPU's " +
                           std::to_string(free) + " free bytes (of " + std::to_string(total) +
                           "): give --size one GPU's shard of the state");
}

}  // namespace

std::optional<std::string> checkpoint_gpu_unavailable_reason() { return no_usable_gpu_reason(0); }

bool is_gpu_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const GpuStateTooLarge*>(&e)) return true;
  const auto* cuda = dynamic_cast<const CudaError*>(&e);
  return cuda != nullptr && cuda->is_out_of_memory();
}

double restore_to_gpu(const std::byte* host, std::size_t bytes) {
  require_free_gpu_memory(bytes);
  DeviceBuffer<std::byte> device(bytes);
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
  const double t0 = steady_seconds();
  REDLINE_CUDA_CHECK(cudaMemcpy(device.data(), host, bytes, cudaMemcpyHostToDevice));
  const double seconds = steady_seconds() - t0;
  // Back in 64 MiB slices (bounded host memory), compared with what was sent.
  constexpr std::size_t kSlice = std::size_t{64} << 20;
  std::vector<std::byte> back(std::min(bytes, kSlice));
  for (std::size_t begin = 0; begin < bytes; begin += kSlice) {
    const std::size_t n = std::min(kSlice, bytes - begin);
    REDLINE_CUDA_CHECK(cudaMemcpy(back.data(), device.data() + begin, n, cudaMemcpyDeviceToHost));
    const auto [ours, theirs] = std::mismatch(back.data(), back.data() + n, host + begin);
    if (ours != back.data() + n)
      throw GpuCopyWrong("restore to the GPU: the device copy differs from the restored state at byte " +
                         std::to_string(begin + static_cast<std::size_t>(ours - back.data())));
  }
  return seconds;
}

std::vector<GpuCopyTiming> measure_checkpoint_copies(std::size_t bytes) {
  require_free_gpu_memory(bytes);
  DeviceBuffer<float> device((bytes + 3) / 4);
  fill_device(device);
  const std::size_t n = device.bytes(), count = device.size();
  std::vector<GpuCopyTiming> out;
  // A copy that moved nothing would show as a fast one: each repetition is
  // verified (`verified`).
  {
    std::vector<std::byte> pageable(n);
    Streams one(1);
    out.push_back(timed_variant(
        {"d2h", "pageable", 1, 0, "staged through a driver bounce buffer", ""},
        verified([&] { return split_copy(pageable.data(), device.data(), n, cudaMemcpyDeviceToHost, one); },
                 [&] { clear_host_samples(pageable.data(), count); },
                 [&] { check_host_copy(pageable.data(), count, copy_name("d2h", "pageable", 1)); })));
  }
  PinnedBuffer<std::byte> pinned(n);
  const auto clear_pinned = [&] { clear_host_samples(pinned.data(), count); };
  for (int s : {1, 2, 4}) {
    Streams streams(s);
    out.push_back(timed_variant(
        {"d2h", "pinned", s, 0, "", ""},
        verified([&] { return split_copy(pinned.data(), device.data(), n, cudaMemcpyDeviceToHost, streams); },
                 clear_pinned, [&] { check_host_copy(pinned.data(), count, copy_name("d2h", "pinned", s)); })));
  }
  out.push_back(timed_variant(
      {"d2h_ceiling", "pinned", 1, 0, "plain cudaMemcpy loop", ""},
      verified(
          [&] {
            REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
            const double t0 = steady_seconds();
            REDLINE_CUDA_CHECK(cudaMemcpy(pinned.data(), device.data(), n, cudaMemcpyDeviceToHost));
            return steady_seconds() - t0;
          },
          clear_pinned, [&] { check_host_copy(pinned.data(), count, copy_name("d2h_ceiling", "pinned", 1)); })));
  // The restore's source is the pinned buffer, refilled from the device
  // (checked, as a wrong d2h may have left it otherwise); the device is
  // cleared whole (a memset there takes a millisecond).
  clear_pinned();
  REDLINE_CUDA_CHECK(cudaMemcpy(pinned.data(), device.data(), n, cudaMemcpyDeviceToHost));
  check_host_copy(pinned.data(), count, "the restore's source (pinned)");
  for (int s : {1, 4}) {
    Streams streams(s);
    out.push_back(timed_variant(
        {"h2d", "pinned", s, 0, "restore: host -> GPU", ""},
        verified([&] { return split_copy(device.data(), pinned.data(), n, cudaMemcpyHostToDevice, streams); },
                 [&] { REDLINE_CUDA_CHECK(cudaMemset(device.data(), 0, n)); },
                 [&] { check_device_copy(device, copy_name("h2d", "pinned", s)); })));
  }
  return out;
}

struct GpuSnapshot::Impl {
  explicit Impl(std::size_t bytes)
      : device((require_free_gpu_memory(bytes), (bytes + 3) / 4)), pinned(device.bytes()), streams(4) {}
  double copy() {
    return split_copy(pinned.data(), device.data(), device.bytes(), cudaMemcpyDeviceToHost, streams);
  }
  DeviceBuffer<float> device;
  PinnedBuffer<std::byte> pinned;
  Streams streams;
};

GpuSnapshot::GpuSnapshot(std::size_t bytes) : impl_(std::make_unique<Impl>(bytes)) {
  fill_device(impl_->device);
  impl_->copy();  // warm: a training job reuses its snapshot buffer
  std::memset(impl_->pinned.data(), 0, impl_->pinned.bytes());  // a copy that moves nothing must show
}
GpuSnapshot::~GpuSnapshot() = default;

double GpuSnapshot::snapshot() {
  clear_host_samples(impl_->pinned.data(), impl_->device.size());  // else a later snapshot finds the last one's
  const double seconds = impl_->copy();
  check_host_copy(impl_->pinned.data(), impl_->device.size(), "GPU snapshot: pinned");
  return seconds;
}

const std::byte* GpuSnapshot::host() const { return impl_->pinned.data(); }

}  // namespace redline
