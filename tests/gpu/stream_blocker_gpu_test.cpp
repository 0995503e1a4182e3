// StreamBlocker on a real device: a held stream stays busy until release(),
// the work queued behind the hold runs after it, and a hold nobody releases
// ends by its timeout and says so.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"
#include "kernels/runner/stream_blocker.cuh"

namespace {

using namespace std::chrono_literals;
using redline::DeviceBuffer;
using redline::StreamBlocker;

class Stream {
 public:
  Stream() { REDLINE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() { (void)cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// cudaSuccess once the stream is idle, cudaErrorNotReady while it is busy.
// "Not ready" is an answer, not a failure: it is cleared so that a later
// REDLINE_CUDA_CHECK_LAST does not report it.
cudaError_t query(cudaStream_t stream) {
  const cudaError_t status = cudaStreamQuery(stream);
  if (status == cudaErrorNotReady) (void)cudaGetLastError();
  return status;
}

// Polls instead of cudaStreamSynchronize: a broken timeout fails the test
// rather than hanging it.
bool idle_within(cudaStream_t stream, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    const cudaError_t status = query(stream);
    if (status == cudaSuccess) return true;
    if (status != cudaErrorNotReady) REDLINE_CUDA_CHECK(status);
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

TEST(StreamBlocker, HoldsTheStreamUntilReleased) {
  const Stream stream;
  StreamBlocker blocker;
  DeviceBuffer<std::uint8_t> buffer(1 << 20);
  REDLINE_CUDA_CHECK(cudaMemset(buffer.data(), 0, buffer.bytes()));

  blocker.block(stream.get());
  // Work queued behind the hold, as a timed batch would be.
  REDLINE_CUDA_CHECK(cudaMemsetAsync(buffer.data(), 0x5A, buffer.bytes(), stream.get()));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(query(stream.get()), cudaErrorNotReady) << "the stream ran ahead of release()";

  blocker.release();
  blocker.release();  // idempotent
  ASSERT_TRUE(idle_within(stream.get(), 5000ms)) << "the stream did not finish after release()";
  EXPECT_FALSE(blocker.timed_out());
  for (const std::uint8_t byte : buffer.to_host()) ASSERT_EQ(byte, 0x5A) << "the work behind the hold did not run";
}

TEST(StreamBlocker, ATimeoutEndsTheHoldAndIsReported) {
  const Stream stream;
  StreamBlocker blocker;
  blocker.block(stream.get(), 0.05);
  const bool idle = idle_within(stream.get(), 5000ms);
  if (!idle) blocker.release();  // so the test ends either way
  ASSERT_TRUE(idle) << "a 0.05 s hold was still in place after 5 s";
  EXPECT_TRUE(blocker.timed_out());

  // A hold needs its release() even when it timed out.
  EXPECT_THROW(blocker.block(stream.get()), std::logic_error);
  blocker.release();

  // The next hold starts clean: its release, not the old timeout, decides.
  blocker.block(stream.get());
  blocker.release();
  ASSERT_TRUE(idle_within(stream.get(), 5000ms));
  EXPECT_FALSE(blocker.timed_out());
}

TEST(StreamBlocker, RefusesATimeoutThatIsNotPositive) {
  const Stream stream;
  StreamBlocker blocker;
  EXPECT_THROW(blocker.block(stream.get(), 0), std::invalid_argument);
  EXPECT_THROW(blocker.block(stream.get(), -1), std::invalid_argument);
  EXPECT_FALSE(blocker.timed_out());  // never held
}

}  // namespace
