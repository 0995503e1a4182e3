// Owning device and pinned-host arrays: memory is released on every exit path,
// including the exceptions a failed benchmark point throws.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cuda_check.cuh"

namespace redline {

// Device memory for `count` elements of T, uninitialized (benchmarks fill it
// with random_fill: never zeros). Move-only: two owners would free twice.
template <typename T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "device memory is copied bytewise");

 public:
  DeviceBuffer() = default;
  // Throws CudaError; e.is_out_of_memory() marks a point that does not fit.
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) REDLINE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), bytes()));
  }
  ~DeviceBuffer() { release(); }

  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }

  T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  bool empty() const noexcept { return count_ == 0; }

  // Synchronous copies for setup and verification, never inside timed work.
  // The host side must hold exactly size() elements.
  void copy_from_host(std::span<const T> host) {
    if (host.size() != count_) throw std::invalid_argument("DeviceBuffer::copy_from_host: size mismatch");
    if (count_ > 0) REDLINE_CUDA_CHECK(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  void copy_to_host(std::span<T> host) const {
    if (host.size() != count_) throw std::invalid_argument("DeviceBuffer::copy_to_host: size mismatch");
    if (count_ > 0) REDLINE_CUDA_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
  }
  std::vector<T> to_host() const {
    std::vector<T> host(count_);
    copy_to_host(host);
    return host;
  }

 private:
  void release() noexcept {
    // A destructor must not throw; a failing cudaFree here means the context
    // is already broken, and the next checked call reports that.
    if (data_ != nullptr) (void)cudaFree(data_);
    data_ = nullptr;
    count_ = 0;
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// Page-locked host memory: needed for truly asynchronous copies and for
// host<->device bandwidth that is not limited by a staging copy.
template <typename T>
class PinnedBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "pinned memory is copied bytewise");

 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) REDLINE_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&data_), bytes()));
  }
  ~PinnedBuffer() { release(); }

  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }

  T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  bool empty() const noexcept { return count_ == 0; }
  T& operator[](std::size_t i) const noexcept { return data_[i]; }
  std::span<T> span() const noexcept { return {data_, count_}; }

 private:
  void release() noexcept {
    if (data_ != nullptr) (void)cudaFreeHost(data_);
    data_ = nullptr;
    count_ = 0;
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace redline
