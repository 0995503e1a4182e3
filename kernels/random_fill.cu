// random_fill: range checks on the host, then one grid-stride kernel that
// evaluates random_value_at for every element.
#include "kernels/random_fill.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/cuda_check.cuh"

namespace redline {

namespace {

template <typename T, typename Bound>
__global__ void random_fill_kernel(T* data, std::size_t count, std::uint64_t seed, Bound lo, Bound hi) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    data[i] = random_value_at<T>(seed, i, lo, hi);
  }
}

template <typename T, typename Bound>
void launch_random_fill(T* data, std::size_t count, std::uint64_t seed, Bound lo, Bound hi, cudaStream_t stream) {
  if (count == 0) return;
  constexpr unsigned threads_per_block = 256;
  // Enough blocks to fill any current GPU; the grid-stride loop covers the
  // rest, and the values do not depend on this choice.
  constexpr std::size_t max_blocks = 4096;
  const auto blocks =
      static_cast<unsigned>(std::min<std::size_t>((count + threads_per_block - 1) / threads_per_block, max_blocks));
  random_fill_kernel<T, Bound><<<blocks, threads_per_block, 0, stream>>>(data, count, seed, lo, hi);
  REDLINE_CUDA_CHECK_LAST();
}

// %g, not std::to_string: a too-narrow range like [0, 1e-9) must not print as [0.000000, 0.000000).
std::string range_text(double lo, double hi) {
  char text[64];
  std::snprintf(text, sizeof text, "[%g, %g)", lo, hi);
  return text;
}

std::string range_text(std::int64_t lo, std::int64_t hi) {
  char text[64];
  std::snprintf(text, sizeof text, "[%lld, %lld)", static_cast<long long>(lo), static_cast<long long>(hi));
  return text;
}

}  // namespace

template <RandomFloatingType T>
void random_fill(T* data, std::size_t count, std::uint64_t seed, double lo, double hi, cudaStream_t stream) {
  if (!(std::isfinite(lo) && std::isfinite(hi) && lo < hi)) {
    throw std::invalid_argument("random_fill: range " + range_text(lo, hi) + " is empty or not finite");
  }
  // Rounding is monotone: when both ends round to zero, everything between does.
  if (random_detail::to_double(random_detail::from_double<T>(lo)) == 0.0 &&
      random_detail::to_double(random_detail::from_double<T>(hi)) == 0.0) {
    throw std::invalid_argument("random_fill: every value in " + range_text(lo, hi) +
                                " rounds to zero in this type; inputs must not be zeros");
  }
  launch_random_fill(data, count, seed, lo, hi, stream);
}

template <RandomIntegerType T>
void random_fill(T* data, std::size_t count, std::uint64_t seed, std::int64_t lo, std::int64_t hi,
                 cudaStream_t stream) {
  constexpr auto type_min = static_cast<std::int64_t>(std::numeric_limits<T>::min());
  constexpr auto type_max = static_cast<std::int64_t>(std::numeric_limits<T>::max());
  const std::string range = range_text(lo, hi);
  if (lo >= hi) throw std::invalid_argument("random_fill: integer range " + range + " is empty");
  if (lo < type_min || hi - 1 > type_max) {
    throw std::invalid_argument("random_fill: integer range " + range + " does not fit the element type");
  }
  if (lo == 0 && hi == 1) {
    throw std::invalid_argument("random_fill: integer range [0, 1) holds only zero; inputs must not be zeros");
  }
  launch_random_fill(data, count, seed, lo, hi, stream);
}

// The element types benchmarks use; callers need no nvcc to call these.
template void random_fill<float>(float*, std::size_t, std::uint64_t, double, double, cudaStream_t);
template void random_fill<double>(double*, std::size_t, std::uint64_t, double, double, cudaStream_t);
template void random_fill<__half>(__half*, std::size_t, std::uint64_t, double, double, cudaStream_t);
template void random_fill<__nv_bfloat16>(__nv_bfloat16*, std::size_t, std::uint64_t, double, double, cudaStream_t);
template void random_fill<__nv_fp8_e4m3>(__nv_fp8_e4m3*, std::size_t, std::uint64_t, double, double, cudaStream_t);
template void random_fill<__nv_fp8_e5m2>(__nv_fp8_e5m2*, std::size_t, std::uint64_t, double, double, cudaStream_t);
template void random_fill<std::int8_t>(std::int8_t*, std::size_t, std::uint64_t, std::int64_t, std::int64_t,
                                       cudaStream_t);
template void random_fill<std::int32_t>(std::int32_t*, std::size_t, std::uint64_t, std::int64_t, std::int64_t,
                                        cudaStream_t);

}  // namespace redline
