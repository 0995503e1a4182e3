// The two ceilings a GEMM sits under: HBM bandwidth (a device-to-device copy
// kernel) and non-tensor FP32 throughput (an FMA kernel). The GEMM tool times
// them with the same measurement as the GEMMs and reports them against the
// datasheet, so a user sees both roofs of this GPU as it runs today.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace redline {

// Copies `bytes` (a multiple of 16; both pointers 16-byte aligned) from src
// to dst with 16-byte vector loads and stores, grid-stride, enough CTAs to
// fill the device. Moves 2 * bytes through HBM (one read, one write). Throws
// std::invalid_argument on misalignment, CudaError when the launch fails.
void enqueue_device_copy(const void* src, void* dst, std::size_t bytes, cudaStream_t stream);

// A launch of the FMA kernel: every thread runs `iterations` rounds of
// independent fused multiply-adds (enough chains to hide FMA latency),
// values chosen so they neither overflow nor denormalize, and writes one
// float to `sink` so the compiler cannot drop the work.
struct FmaLaunch {
  int blocks = 0;
  int threads_per_block = 0;
  std::int64_t iterations = 0;
  double flop_count() const;   // 2 FLOP per FMA, every thread, every FMA of every round
  std::size_t sink_floats() const { return static_cast<std::size_t>(blocks) * threads_per_block; }
};

// Sizes a launch for the current device that does about `target_flop` FLOP
// (blocks from the SM count and occupancy, so every SM is busy).
FmaLaunch plan_fma(double target_flop);
// `sink` must hold launch.sink_floats() floats.
void enqueue_fma(const FmaLaunch& launch, float* sink, cudaStream_t stream);

}  // namespace redline
