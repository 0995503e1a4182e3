// DeviceBuffer, PinnedBuffer and EventTimer on a real device.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"
#include "kernels/runner/event_timer.cuh"

namespace {

using redline::DeviceBuffer;
using redline::EventTimer;
using redline::PinnedBuffer;

TEST(DeviceBuffer, AllocatesAndReportsSize) {
  const DeviceBuffer<double> empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.data(), nullptr);

  const DeviceBuffer<double> buffer(1000);
  EXPECT_NE(buffer.data(), nullptr);
  EXPECT_EQ(buffer.size(), 1000u);
  EXPECT_EQ(buffer.bytes(), 1000u * sizeof(double));
}

TEST(DeviceBuffer, MoveTransfersOwnership) {
  DeviceBuffer<int> source(64);
  int* const pointer = source.data();

  DeviceBuffer<int> moved(std::move(source));
  EXPECT_EQ(moved.data(), pointer);
  EXPECT_EQ(moved.size(), 64u);
  EXPECT_EQ(source.data(), nullptr);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(source.size(), 0u);

  DeviceBuffer<int> assigned(8);
  assigned = std::move(moved);  // frees the 8-element allocation
  EXPECT_EQ(assigned.data(), pointer);
  EXPECT_EQ(assigned.size(), 64u);
  EXPECT_EQ(moved.data(), nullptr);  // NOLINT(bugprone-use-after-move)
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST(DeviceBuffer, RoundTripCopyPreservesValues) {
  std::vector<std::int32_t> host(100003);
  std::iota(host.begin(), host.end(), -50000);
  DeviceBuffer<std::int32_t> buffer(host.size());
  buffer.copy_from_host(host);
  EXPECT_EQ(buffer.to_host(), host);

  std::vector<std::int32_t> wrong_size(10);
  EXPECT_THROW(buffer.copy_from_host(wrong_size), std::invalid_argument);
}

TEST(PinnedBuffer, MoveAndAsyncRoundTrip) {
  PinnedBuffer<float> source(4096);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<float>(i) + 0.5f;
  float* const pointer = source.data();

  PinnedBuffer<float> pinned(std::move(source));
  EXPECT_EQ(pinned.data(), pointer);
  EXPECT_EQ(source.data(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(pinned.bytes(), 4096u * sizeof(float));

  cudaPointerAttributes attributes{};
  REDLINE_CUDA_CHECK(cudaPointerGetAttributes(&attributes, pinned.data()));
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost);  // page-locked, not pageable

  DeviceBuffer<float> device(pinned.size());
  PinnedBuffer<float> back(pinned.size());
  cudaStream_t stream = nullptr;
  REDLINE_CUDA_CHECK(cudaStreamCreate(&stream));
  REDLINE_CUDA_CHECK(cudaMemcpyAsync(device.data(), pinned.data(), pinned.bytes(), cudaMemcpyHostToDevice, stream));
  REDLINE_CUDA_CHECK(cudaMemcpyAsync(back.data(), device.data(), device.bytes(), cudaMemcpyDeviceToHost, stream));
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
  REDLINE_CUDA_CHECK(cudaStreamDestroy(stream));
  for (std::size_t i = 0; i < back.size(); ++i) ASSERT_EQ(back[i], pinned[i]) << "index " << i;
}

// Busy-waits a fixed number of SM clock cycles: a kernel that certainly
// takes measurable time, whatever the GPU.
__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

TEST(EventTimer, MeasuresPositiveTimeForKnownKernel) {
  EventTimer timer;
  timer.start();
  spin_kernel<<<1, 1>>>(1'000'000);
  REDLINE_CUDA_CHECK_LAST();
  timer.stop();
  const double seconds = timer.elapsed_seconds();
  EXPECT_TRUE(seconds > 0.0) << "the events recorded an interval: " << seconds;

  EventTimer moved(std::move(timer));  // still usable after a move
  moved.start();
  spin_kernel<<<1, 1>>>(1'000'000);
  REDLINE_CUDA_CHECK_LAST();
  moved.stop();
  EXPECT_TRUE(moved.elapsed_seconds() > 0.0) << "the moved timer still holds its events";
}

}  // namespace
