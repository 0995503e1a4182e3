// checkpoint_bench's GPU side on a real device: the copy variants, the
// snapshot and its check, restore to the GPU, the out-of-memory refusal, and
// the GEMM load used during the async persist.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "kernels/checkpoint_copy.cuh"
#include "kernels/cuda_check.cuh"
#include "kernels/gemm_load.cuh"
#include "kernels/random_fill.cuh"

namespace {

using redline::GpuSnapshot;

constexpr std::size_t kBytes = std::size_t{64} << 20;

TEST(CheckpointCopy, EveryVariantIsTimed) {
  const auto timings = redline::measure_checkpoint_copies(kBytes);
  std::set<std::string> seen;
  for (const auto& t : timings) {
    seen.insert(t.stage + "/" + t.memory + "/" + std::to_string(t.streams));
    EXPECT_EQ(t.wrong, "") << t.stage << " passed its check";
    EXPECT_TRUE(std::isfinite(t.seconds) && t.seconds > 0) << "a time was recorded for " << t.stage;
  }
  EXPECT_EQ(seen, (std::set<std::string>{"d2h/pageable/1", "d2h/pinned/1", "d2h/pinned/2", "d2h/pinned/4",
                                         "d2h_ceiling/pinned/1", "h2d/pinned/1", "h2d/pinned/4"}));
}

// The snapshot's own check passes, and the pinned copy holds the device's
// random state (seed and layout as the check assumes).
TEST(CheckpointCopy, SnapshotHoldsTheDeviceState) {
  GpuSnapshot snapshot(kBytes);
  const double seconds = snapshot.snapshot();
  EXPECT_TRUE(std::isfinite(seconds) && seconds > 0) << "a time was recorded";
  const auto* floats = reinterpret_cast<const float*>(snapshot.host());
  for (std::size_t i : {std::size_t{0}, std::size_t{12345}, kBytes / 4 - 1})
    EXPECT_EQ(floats[i], redline::random_value_at<float>(0xC0FFEEull, i)) << "element " << i;
}

TEST(CheckpointCopy, RestoreToGpuRoundTrips) {
  std::vector<std::byte> host(kBytes + 3);  // an odd tail
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::byte>((i * 131) ^ (i >> 9));
  const double seconds = redline::restore_to_gpu(host.data(), host.size());
  EXPECT_TRUE(std::isfinite(seconds) && seconds > 0) << "a time was recorded";
}

// A state larger than the GPU's free memory is refused before cudaMalloc,
// naming both sizes, and counts as out of memory.
TEST(CheckpointCopy, AStateLargerThanTheGpuIsOutOfMemory) {
  std::size_t free = 0, total = 0;
  REDLINE_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  try {
    redline::measure_checkpoint_copies(total + 1);
    FAIL() << "a state over the GPU's memory was accepted";
  } catch (const redline::GpuStateTooLarge& e) {
    EXPECT_TRUE(redline::is_gpu_out_of_memory(e));
    EXPECT_NE(std::string(e.what()).find(std::to_string(total + 1)), std::string::npos) << e.what();
  }
}

// The load verifies its GEMM, then runs at a measurable rate, also when
// `stop` is already true (one batch always runs).
TEST(GemmLoad, RunsVerifiedGemmsAtARate) {
  const redline::GemmLoad load;
  EXPECT_NE(load.description().find("8192"), std::string::npos) << load.description();
  const double timed = load.rate(0.2, {});
  EXPECT_TRUE(std::isfinite(timed) && timed > 0) << "GEMMs were counted";
  const double stopped = load.rate(0, [] { return true; });
  EXPECT_TRUE(std::isfinite(stopped) && stopped > 0) << "one batch runs even when stopped at once";
}

}  // namespace
