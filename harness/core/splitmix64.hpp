// SplitMix64's output function (Steele, Lea and Flood, 2014): a cheap
// bijective mixer that passes BigCrush. The one copy: the collectives' data
// pattern, the checkpoint state, the CUDA random fill and tests all derive
// their pseudo-random values from it. Pure C++; when nvcc compiles it, it is
// callable from device code too.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define REDLINE_HOST_DEVICE __host__ __device__
#else
#define REDLINE_HOST_DEVICE
#endif

namespace redline {

// SplitMix64's step: 2^64 divided by the golden ratio, odd.
inline constexpr std::uint64_t kSplitMix64Step = 0x9E3779B97F4A7C15ull;

// The mixed value of `x` + one step: consecutive x give unrelated outputs.
REDLINE_HOST_DEVICE constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += kSplitMix64Step;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace redline
