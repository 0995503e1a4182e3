// random_fill on the device against random_value_at on the host: same bits,
// reproducible, never zero, in range, sanely distributed, for every type.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"
#include "kernels/random_fill.cuh"

namespace {

using redline::DeviceBuffer;
using redline::random_fill;
using redline::random_value_at;
using redline::random_detail::from_double;
using redline::random_detail::to_double;

// Not a multiple of the block size, and more threads than the capped grid
// launches, so the grid-stride loop runs more than once.
constexpr std::size_t kCount = (std::size_t{1} << 20) + 12345;

template <typename T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <typename T>
std::vector<T> fill_on_device(std::uint64_t seed, double lo, double hi) {
  DeviceBuffer<T> buffer(kCount);
  random_fill(buffer.data(), buffer.size(), seed, lo, hi);
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
  return buffer.to_host();
}

template <typename T>
std::vector<T> fill_on_device(std::uint64_t seed, std::int64_t lo, std::int64_t hi) {
  DeviceBuffer<T> buffer(kCount);
  random_fill(buffer.data(), buffer.size(), seed, lo, hi);
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
  return buffer.to_host();
}

template <typename T>
class RandomFillFloating : public testing::Test {};
using FloatingTypes = testing::Types<float, double, __half, __nv_bfloat16, __nv_fp8_e4m3, __nv_fp8_e5m2>;
TYPED_TEST_SUITE(RandomFillFloating, FloatingTypes);

TYPED_TEST(RandomFillFloating, DeviceValuesEqualHostRandomValueAt) {
  using T = TypeParam;
  // [-1, 1) is the default; [0.5, 4) is asymmetric; [-0.01, 0.01) makes fp8
  // e4m3 redraw often (|x| < 2^-10 rounds to zero), exercising the redraw path.
  for (const auto& [lo, hi] : {std::pair{-1.0, 1.0}, std::pair{0.5, 4.0}, std::pair{-0.01, 0.01}}) {
    const std::uint64_t seed = 20240611;
    const std::vector<T> device = fill_on_device<T>(seed, lo, hi);
    std::size_t mismatches = 0;
    std::size_t first_mismatch = 0;
    for (std::size_t i = 0; i < device.size(); ++i) {
      if (!same_bits(device[i], random_value_at<T>(seed, i, lo, hi)) && mismatches++ == 0) first_mismatch = i;
    }
    EXPECT_EQ(mismatches, 0u) << "range [" << lo << ", " << hi << "): first at index " << first_mismatch
                              << ": device " << to_double(device[first_mismatch]) << ", host "
                              << to_double(random_value_at<T>(seed, first_mismatch, lo, hi));
  }
}

TYPED_TEST(RandomFillFloating, SameSeedSameValuesOtherSeedOtherValues) {
  using T = TypeParam;
  const std::vector<T> first = fill_on_device<T>(7, -1.0, 1.0);
  const std::vector<T> again = fill_on_device<T>(7, -1.0, 1.0);
  const std::vector<T> other = fill_on_device<T>(8, -1.0, 1.0);
  ASSERT_EQ(std::memcmp(first.data(), again.data(), first.size() * sizeof(T)), 0);
  std::size_t equal = 0;
  for (std::size_t i = 0; i < first.size(); ++i) equal += same_bits(first[i], other[i]) ? 1 : 0;
  // fp8 has only ~250 values, so some coincidences are expected, not most.
  EXPECT_LT(equal, first.size() / 10);
}

TYPED_TEST(RandomFillFloating, NeverZeroInRangeMeanNearMidpoint) {
  using T = TypeParam;
  for (const auto& [lo, hi] : {std::pair{-1.0, 1.0}, std::pair{0.5, 4.0}, std::pair{-0.01, 0.01}}) {
    const std::vector<T> values = fill_on_device<T>(99, lo, hi);
    const double lowest = to_double(from_double<T>(lo));
    const double highest = to_double(from_double<T>(hi));
    std::size_t zeros = 0;
    std::size_t out_of_range = 0;
    double sum = 0.0;
    for (const T& value : values) {
      const double x = to_double(value);
      zeros += x == 0.0 ? 1 : 0;
      out_of_range += (x < lowest || x > highest) ? 1 : 0;
      sum += x;
    }
    EXPECT_EQ(zeros, 0u) << "range [" << lo << ", " << hi << ")";
    EXPECT_EQ(out_of_range, 0u) << "range [" << lo << ", " << hi << ")";
    // Uniform: the mean's standard error is (hi - lo) / sqrt(12 n), about
    // 3e-4 of the width here; 2% of the width also absorbs fp8 rounding.
    const double mean = sum / static_cast<double>(values.size());
    EXPECT_NEAR(mean, (lo + hi) / 2, 0.02 * (hi - lo)) << "range [" << lo << ", " << hi << ")";
  }
}

template <typename T>
class RandomFillInteger : public testing::Test {};
using IntegerTypes = testing::Types<std::int8_t, std::int32_t>;
TYPED_TEST_SUITE(RandomFillInteger, IntegerTypes);

TYPED_TEST(RandomFillInteger, DeviceValuesEqualHostNonZeroInRangeEveryValueSeen) {
  using T = TypeParam;
  constexpr std::int64_t lo = -8;
  constexpr std::int64_t hi = 8;
  const std::uint64_t seed = 1234;
  const std::vector<T> values = fill_on_device<T>(seed, lo, hi);
  std::vector<std::size_t> seen(hi - lo, 0);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    mismatches += values[i] != random_value_at<T>(seed, i, lo, hi) ? 1 : 0;
    ASSERT_NE(values[i], 0) << "index " << i;
    ASSERT_GE(values[i], lo) << "index " << i;
    ASSERT_LT(values[i], hi) << "index " << i;
    ++seen[static_cast<std::size_t>(values[i] - lo)];
  }
  EXPECT_EQ(mismatches, 0u);
  // 15 non-zero values, about 70k each: every one must appear, none dominate.
  for (std::int64_t v = lo; v < hi; ++v) {
    if (v == 0) continue;
    EXPECT_NEAR(static_cast<double>(seen[v - lo]), values.size() / 15.0, values.size() / 150.0) << "value " << v;
  }
  const std::vector<T> again = fill_on_device<T>(seed, lo, hi);
  EXPECT_EQ(values, again);
}

TEST(RandomFill, ZeroCountLaunchesNothing) {
  EXPECT_NO_THROW(random_fill<float>(nullptr, 0, 1));
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace
