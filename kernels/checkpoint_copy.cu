#include "kernels/checkpoint_copy.cuh"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"
#include "kernels/gpu_availability.cuh"
#include "kernels/random_fill.cuh"

namespace redline {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

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
  const double t0 = now_s();
  const std::size_t n = static_cast<std::size_t>(streams.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t begin = bytes * i / n, end = bytes * (i + 1) / n;
    REDLINE_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin,
                                       end - begin, kind, streams[i]));
  }
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
  return now_s() - t0;
}

template <typename F>
double best_of(int repetitions, F&& run) {
  double best = std::numeric_limits<double>::infinity();
  run();  // warm-up: first-touch of host pages, lazy context work
  for (int r = 0; r < repetitions; ++r) best = std::min(best, run());
  return best;
}

void fill_device(DeviceBuffer<float>& device) {
  random_fill(device.data(), device.size(), 0xC0FFEEull);
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace

std::optional<std::string> checkpoint_gpu_unavailable_reason() { return no_usable_gpu_reason(0); }

std::vector<GpuCopyTiming> measure_checkpoint_copies(std::size_t bytes) {
  constexpr int kRepetitions = 3;
  DeviceBuffer<float> device((bytes + 3) / 4);
  fill_device(device);
  const std::size_t n = device.bytes();
  std::vector<GpuCopyTiming> out;
  {
    std::vector<std::byte> pageable(n);
    Streams one(1);
    out.push_back({"d2h", "pageable", 1,
                   best_of(kRepetitions, [&] { return split_copy(pageable.data(), device.data(), n, cudaMemcpyDeviceToHost, one); }),
                   "staged through a driver bounce buffer"});
  }
  PinnedBuffer<std::byte> pinned(n);
  for (int s : {1, 2, 4}) {
    Streams streams(s);
    out.push_back({"d2h", "pinned", s,
                   best_of(kRepetitions, [&] { return split_copy(pinned.data(), device.data(), n, cudaMemcpyDeviceToHost, streams); }),
                   ""});
  }
  out.push_back({"d2h_ceiling", "pinned", 1, best_of(kRepetitions, [&] {
                   REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
                   const double t0 = now_s();
                   REDLINE_CUDA_CHECK(cudaMemcpy(pinned.data(), device.data(), n, cudaMemcpyDeviceToHost));
                   return now_s() - t0;
                 }),
                 "plain cudaMemcpy loop"});
  for (int s : {1, 4}) {
    Streams streams(s);
    out.push_back({"h2d", "pinned", s,
                   best_of(kRepetitions, [&] { return split_copy(device.data(), pinned.data(), n, cudaMemcpyHostToDevice, streams); }),
                   "restore: host -> GPU"});
  }
  return out;
}

struct GpuSnapshot::Impl {
  explicit Impl(std::size_t bytes) : device((bytes + 3) / 4), pinned(device.bytes()), streams(4) {}
  DeviceBuffer<float> device;
  PinnedBuffer<std::byte> pinned;
  Streams streams;
};

GpuSnapshot::GpuSnapshot(std::size_t bytes) : impl_(std::make_unique<Impl>(bytes)) { fill_device(impl_->device); }
GpuSnapshot::~GpuSnapshot() = default;

double GpuSnapshot::snapshot() {
  return split_copy(impl_->pinned.data(), impl_->device.data(), impl_->device.bytes(), cudaMemcpyDeviceToHost,
                    impl_->streams);
}

const std::byte* GpuSnapshot::host() const { return impl_->pinned.data(); }

}  // namespace redline
