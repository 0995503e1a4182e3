// Reproducible random benchmark inputs: element i of a fill depends only on
// (seed, i, range), computed by the same __host__ __device__ function on the
// GPU and the CPU, so reference checks and tests can regenerate any input
// without copying it back.
#pragma once

#include <cuda_runtime_api.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>

#include "harness/core/splitmix64.hpp"

namespace redline {

template <typename T>
concept RandomFloatingType = std::same_as<T, float> || std::same_as<T, double> || std::same_as<T, __half> ||
                             std::same_as<T, __nv_bfloat16> || std::same_as<T, __nv_fp8_e4m3> ||
                             std::same_as<T, __nv_fp8_e5m2>;

template <typename T>
concept RandomIntegerType = std::same_as<T, std::int8_t> || std::same_as<T, std::int32_t>;

namespace random_detail {

// Counter-based: no generator state, so any thread (or the CPU) computes any
// element directly and the result cannot depend on the launch shape. The seed
// is mixed first so that neighbouring seeds give unrelated sequences rather
// than shifted copies; `draw` gives each element fresh bits when a value has
// to be redrawn.
__host__ __device__ inline std::uint64_t random_bits_at(std::uint64_t seed, std::uint64_t index, std::uint32_t draw) {
  const std::uint64_t key = splitmix64(splitmix64(seed) ^ draw);
  return splitmix64(key + index * kSplitMix64Step);
}

// The top 53 bits as a double in [0, 1): every value is exact.
__host__ __device__ inline double unit_interval(std::uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// lo + span * u rounded once. nvcc contracts a*b+c into an FMA on the device
// while the host compiler may not, which would make host and device values
// differ in the last bit; an explicit FMA on both sides gives identical bits.
__host__ __device__ inline double scale_to_range(double span, double u, double lo) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(span, u, lo);
#else
  return std::fma(span, u, lo);
#endif
}

// Conversions that round to nearest-even on host and device alike.
template <RandomFloatingType T>
__host__ __device__ inline T from_double(double x) {
  if constexpr (std::same_as<T, double>) {
    return x;
  } else if constexpr (std::same_as<T, float>) {
    return static_cast<float>(x);
  } else if constexpr (std::same_as<T, __half>) {
    return __double2half(x);
  } else if constexpr (std::same_as<T, __nv_bfloat16>) {
    return __double2bfloat16(x);
  } else {
    return T(x);  // fp8: round to nearest, saturating to the largest finite value
  }
}

template <RandomFloatingType T>
__host__ __device__ inline double to_double(T value) {
  if constexpr (std::same_as<T, double>) {
    return value;
  } else if constexpr (std::same_as<T, float>) {
    return static_cast<double>(value);
  } else if constexpr (std::same_as<T, __half>) {
    return static_cast<double>(__half2float(value));
  } else if constexpr (std::same_as<T, __nv_bfloat16>) {
    return static_cast<double>(__bfloat162float(value));
  } else {
    return static_cast<double>(static_cast<float>(value));
  }
}

// Redraws are rare (a zero needs |x| below half the smallest subnormal of T:
// 2^-10 for fp8 e4m3, far less for the other types), so a few dozen draws
// make falling through to the fallback practically impossible.
inline constexpr std::uint32_t max_draws = 64;

}  // namespace random_detail

// Element `index` of the fill with `seed`: x uniform in [lo, hi), rounded to
// T. Never zero (zeros run faster and hide unwritten outputs): a value that
// rounds to zero is redrawn. Rounding is monotone, so values lie in
// [T(lo), T(hi)]; for narrow types a value near hi can round to hi itself.
template <RandomFloatingType T>
__host__ __device__ inline T random_value_at(std::uint64_t seed, std::uint64_t index, double lo = -1.0,
                                             double hi = 1.0) {
  for (std::uint32_t draw = 0; draw < random_detail::max_draws; ++draw) {
    const double u = random_detail::unit_interval(random_detail::random_bits_at(seed, index, draw));
    const T value = random_detail::from_double<T>(random_detail::scale_to_range(hi - lo, u, lo));
    if (random_detail::to_double(value) != 0.0) return value;
  }
  // Only when nearly all of [lo, hi) rounds to zero in T. random_fill rejects
  // ranges where all of it does, so one end is non-zero.
  const T at_lo = random_detail::from_double<T>(lo);
  return random_detail::to_double(at_lo) != 0.0 ? at_lo : random_detail::from_double<T>(hi);
}

// Integers: uniform over the non-zero integers in [lo, hi). Modulo bias is
// below 2^-32 for the small ranges this is meant for.
template <RandomIntegerType T>
__host__ __device__ inline T random_value_at(std::uint64_t seed, std::uint64_t index, std::int64_t lo,
                                             std::int64_t hi) {
  const auto span = static_cast<std::uint64_t>(hi - lo);
  for (std::uint32_t draw = 0; draw < random_detail::max_draws; ++draw) {
    const std::int64_t value =
        lo + static_cast<std::int64_t>(random_detail::random_bits_at(seed, index, draw) % span);
    if (value != 0) return static_cast<T>(value);
  }
  return static_cast<T>(lo != 0 ? lo : hi - 1);
}

// Fills data[0, count) with random_value_at<T>(seed, i, lo, hi), asynchronously
// on `stream`. Throws std::invalid_argument for an empty range or one whose
// every value rounds to zero in T, CudaError when the launch fails.
template <RandomFloatingType T>
void random_fill(T* data, std::size_t count, std::uint64_t seed, double lo = -1.0, double hi = 1.0,
                 cudaStream_t stream = nullptr);

// Integer types have no sensible default range: the caller picks one small
// enough for the computation (e.g. int8 GEMM inputs in [-8, 8)). The range
// must fit in T and contain a non-zero integer.
template <RandomIntegerType T>
void random_fill(T* data, std::size_t count, std::uint64_t seed, std::int64_t lo, std::int64_t hi,
                 cudaStream_t stream = nullptr);

}  // namespace redline
