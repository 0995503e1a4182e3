// The roofline kernels: a 16-byte vector copy for the bandwidth roof and a
// chain-parallel FMA loop for the FP32 roof, each launched with as many CTAs
// as the device holds at once.
#include "kernels/roofline.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda_check.cuh"

namespace redline {

namespace {

constexpr int kCopyThreads = 256;
// Loads issued before the first store: more bytes in flight per thread than
// one 16-byte load, which is what keeps HBM busy with a grid this small.
constexpr int kCopyUnroll = 4;

__global__ void __launch_bounds__(kCopyThreads)
    copy16_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kCopyUnroll - 1) * stride < count; i += kCopyUnroll * stride) {
    uint4 v[kCopyUnroll];
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u) dst[i + u * stride] = v[u];
  }
  for (; i < count; i += stride) dst[i] = src[i];
}

// Independent chains per thread: an FMA's result is ready about 4 cycles
// after issue, so one chain per thread would leave the FP32 pipes idle
// between dependent FMAs even at full occupancy.
constexpr int kFmaChains = 8;
// Rounds per loop trip: the loop's own instructions share issue slots with
// the FMAs, so they are amortized over kFmaChains * kFmaUnroll FMAs.
constexpr int kFmaUnroll = 16;
constexpr int kFmaThreads = 256;

// x <- x * a + b with a just below 1 converges to b / (1 - a) = 1: values
// stay near 1, never overflowing or going subnormal (which some GPUs run
// slower), however many rounds run.
constexpr float kFmaMultiplier = 0.9999f;
constexpr float kFmaAddend = 1e-4f;

__global__ void __launch_bounds__(kFmaThreads)
    fma_kernel(float* __restrict__ sink, std::int64_t iterations, float a, float b) {
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float x[kFmaChains];
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) x[c] = 1.0f + static_cast<float>(thread % 64) * 1e-3f + c * 1e-4f;
  std::int64_t i = 0;
  for (; i + kFmaUnroll <= iterations; i += kFmaUnroll) {
#pragma unroll
    for (int u = 0; u < kFmaUnroll; ++u)
#pragma unroll
      for (int c = 0; c < kFmaChains; ++c) x[c] = fmaf(x[c], a, b);
  }
  for (; i < iterations; ++i)
#pragma unroll
    for (int c = 0; c < kFmaChains; ++c) x[c] = fmaf(x[c], a, b);
  float total = 0.0f;
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) total += x[c];
  sink[thread] = total;
}

int current_sm_count() {
  int device = 0;
  REDLINE_CUDA_CHECK(cudaGetDevice(&device));
  int sm_count = 0;
  REDLINE_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  return std::max(1, sm_count);
}

// CTAs of `kernel` the whole device runs at once.
template <typename Kernel>
int resident_blocks(Kernel kernel, int threads_per_block) {
  int per_sm = 0;
  REDLINE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads_per_block, 0));
  return current_sm_count() * std::max(1, per_sm);
}

// The copy's grid for the current device, remembered per thread: timed
// loops enqueue copies back to back, and an occupancy query per launch would
// add host time that can starve a short copy.
unsigned copy_grid_limit() {
  thread_local int device = -1;
  thread_local unsigned blocks = 0;
  int current = 0;
  REDLINE_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) {
    blocks = static_cast<unsigned>(resident_blocks(copy16_kernel, kCopyThreads));
    device = current;
  }
  return blocks;
}

}  // namespace

void enqueue_device_copy(const void* src, void* dst, std::size_t bytes, cudaStream_t stream) {
  if (bytes % 16 != 0 || reinterpret_cast<std::uintptr_t>(src) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(dst) % 16 != 0) {
    throw std::invalid_argument("enqueue_device_copy: bytes (" + std::to_string(bytes) +
                                ") must be a multiple of 16 and both pointers 16-byte aligned");
  }
  if (bytes == 0) return;
  const std::size_t count = bytes / 16;
  const std::size_t needed = (count + kCopyThreads - 1) / kCopyThreads;
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>(needed, copy_grid_limit()));
  copy16_kernel<<<blocks, kCopyThreads, 0, stream>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst), count);
  REDLINE_CUDA_CHECK_LAST();
}

double FmaLaunch::flop_count() const {
  return 2.0 * kFmaChains * static_cast<double>(blocks) * threads_per_block * static_cast<double>(iterations);
}

FmaLaunch plan_fma(double target_flop) {
  if (!(std::isfinite(target_flop) && target_flop > 0)) {
    throw std::invalid_argument("plan_fma: target_flop must be positive and finite (got " +
                                std::to_string(target_flop) + ")");
  }
  FmaLaunch launch;
  launch.threads_per_block = kFmaThreads;
  launch.blocks = resident_blocks(fma_kernel, kFmaThreads);
  const double flop_per_round = 2.0 * kFmaChains * launch.blocks * launch.threads_per_block;
  // Whole loop trips only, so the timed kernel never runs the remainder loop.
  const double trips = std::max(1.0, std::round(target_flop / (flop_per_round * kFmaUnroll)));
  launch.iterations = static_cast<std::int64_t>(trips) * kFmaUnroll;
  return launch;
}

void enqueue_fma(const FmaLaunch& launch, float* sink, cudaStream_t stream) {
  // The kernel is compiled for at most kFmaThreads per block (its register
  // budget depends on it): plan_fma's launches always fit.
  if (launch.blocks < 1 || launch.threads_per_block < 1 || launch.threads_per_block > kFmaThreads ||
      launch.iterations < 1 || sink == nullptr) {
    throw std::invalid_argument("enqueue_fma: need blocks >= 1, 1 <= threads_per_block <= " +
                                std::to_string(kFmaThreads) + ", iterations >= 1 and a sink (got " +
                                std::to_string(launch.blocks) + ", " + std::to_string(launch.threads_per_block) +
                                ", " + std::to_string(launch.iterations) + ")");
  }
  fma_kernel<<<static_cast<unsigned>(launch.blocks), static_cast<unsigned>(launch.threads_per_block), 0, stream>>>(
      sink, launch.iterations, kFmaMultiplier, kFmaAddend);
  REDLINE_CUDA_CHECK_LAST();
}

}  // namespace redline
