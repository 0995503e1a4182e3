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

// Where a buffer's memory comes from. Release must not throw (destructors):
// a failing free means the context is already broken, and the next checked
// call reports that.
struct DeviceMemory {
  static void allocate(void** ptr, std::size_t bytes) { REDLINE_CUDA_CHECK(cudaMalloc(ptr, bytes)); }
  static void release(void* ptr) noexcept { (void)cudaFree(ptr); }
};
// Page-locked host memory: needed for truly asynchronous copies and for
// host<->device bandwidth that is not limited by a staging copy.
struct PinnedMemory {
  static void allocate(void** ptr, std::size_t bytes) { REDLINE_CUDA_CHECK(cudaMallocHost(ptr, bytes)); }
  static void release(void* ptr) noexcept { (void)cudaFreeHost(ptr); }
};

// `count` elements of T, uninitialized (benchmarks fill them with
// random_fill: never zeros). Move-only: two owners would free twice.
// Allocation throws CudaError; e.is_out_of_memory() marks a point that does
// not fit.
template <typename T, typename Memory>
class CudaArray {
  static_assert(std::is_trivially_copyable_v<T>, "CUDA memory is copied bytewise");

 public:
  CudaArray() = default;
  explicit CudaArray(std::size_t count) : count_(count) {
    if (count_ > 0) Memory::allocate(reinterpret_cast<void**>(&data_), bytes());
  }
  ~CudaArray() { release(); }

  CudaArray(const CudaArray&) = delete;
  CudaArray& operator=(const CudaArray&) = delete;
  CudaArray(CudaArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  CudaArray& operator=(CudaArray&& other) noexcept {
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

 private:
  void release() noexcept {
    if (data_ != nullptr) Memory::release(data_);
    data_ = nullptr;
    count_ = 0;
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

template <typename T>
class DeviceBuffer : public CudaArray<T, DeviceMemory> {
 public:
  using CudaArray<T, DeviceMemory>::CudaArray;

  // Synchronous copies for setup and verification, never inside timed work.
  // The host side must hold exactly size() elements.
  void copy_from_host(std::span<const T> host) {
    if (host.size() != this->size()) throw std::invalid_argument("DeviceBuffer::copy_from_host: size mismatch");
    if (!this->empty())
      REDLINE_CUDA_CHECK(cudaMemcpy(this->data(), host.data(), this->bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<T> to_host() const {
    std::vector<T> host(this->size());
    if (!this->empty())
      REDLINE_CUDA_CHECK(cudaMemcpy(host.data(), this->data(), this->bytes(), cudaMemcpyDeviceToHost));
    return host;
  }
};

template <typename T>
class PinnedBuffer : public CudaArray<T, PinnedMemory> {
 public:
  using CudaArray<T, PinnedMemory>::CudaArray;

  T& operator[](std::size_t i) const noexcept { return this->data()[i]; }
};

}  // namespace redline
