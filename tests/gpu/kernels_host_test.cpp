// What of kernels/ can be checked without a GPU, checked for real: the
// no-GPU diagnosis, checked-call messages, environment capture without a
// device, and the host side of random_value_at. Compiled by the host C++
// compiler, which also proves the headers work outside nvcc. Each GPU-
// dependent assertion also holds on a machine that has a GPU.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "harness/core/environment.hpp"
#include "kernels/checkpoint_copy.cuh"
#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"
#include "kernels/device_query.cuh"
#include "kernels/runner/event_timer.cuh"
#include "kernels/gpu_availability.cuh"
#include "kernels/nvtx_range.cuh"
#include "kernels/random_fill.cuh"

namespace {

using redline::random_value_at;
using redline::random_detail::from_double;
using redline::random_detail::to_double;

bool cuda_reports_devices() {
  int count = 0;
  const bool found = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  (void)cudaGetLastError();
  return found;
}

TEST(GpuAvailability, ReasonMatchesWhatTheRuntimeSees) {
  const auto reason = redline::no_usable_gpu_reason();
  if (cuda_reports_devices()) {
    EXPECT_FALSE(reason.has_value()) << *reason;
  } else {
    ASSERT_TRUE(reason.has_value());
    EXPECT_NE(reason->find("cudaGetDeviceCount"), std::string::npos) << *reason;
    EXPECT_EQ(reason->find('\n'), std::string::npos) << "one line: " << *reason;
    std::printf("no_usable_gpu_reason: %s\n", reason->c_str());
  }
}

TEST(GpuAvailability, CompiledArchitecturesAreNamed) {
  const std::string archs = redline::compiled_cuda_architectures();
  EXPECT_FALSE(archs.empty());
  EXPECT_NE(archs, "unknown");
  std::printf("compiled_cuda_architectures: %s\n", archs.c_str());
}

TEST(CudaCheck, FailingCallNamesCallFileAndLine) {
  int count = 0;
  int line = 0;
  std::string expected_call;
  try {
    if (!cuda_reports_devices()) {
      expected_call = "cudaGetDeviceCount(&count) failed";
      line = __LINE__ + 1;
      REDLINE_CUDA_CHECK(cudaGetDeviceCount(&count));
    } else {
      expected_call = "cudaSetDevice(9999) failed";
      line = __LINE__ + 1;
      REDLINE_CUDA_CHECK(cudaSetDevice(9999));
    }
    FAIL() << "the checked call did not throw";
  } catch (const redline::CudaError& error) {
    const std::string what = error.what();
    std::printf("CudaError: %s\n", what.c_str());
    EXPECT_NE(what.find(expected_call), std::string::npos) << what;
    EXPECT_NE(what.find(std::string(" at tests/gpu/kernels_host_test.cpp:") + std::to_string(line)),
              std::string::npos)
        << what;
    EXPECT_NE(error.code(), cudaSuccess);
    EXPECT_FALSE(error.is_out_of_memory());
  }
  // A missing driver fails every call for good; a bad device ordinal must not
  // linger as the last error once it has been reported.
  if (cuda_reports_devices()) {
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  }
}

TEST(CudaCheck, MessageFormatAndOutOfMemory) {
  const std::string root_relative = "kernels/device_buffer.cuh";
  std::string absolute = __FILE__;  // <root>/tests/gpu/kernels_host_test.cpp
  absolute = absolute.substr(0, absolute.size() - std::strlen("tests/gpu/kernels_host_test.cpp")) + root_relative;
  const redline::CudaError error(cudaErrorMemoryAllocation, "cudaMalloc(&ptr, bytes)", absolute.c_str(), 42);
  EXPECT_STREQ(error.what(),
               "cudaMalloc(&ptr, bytes) failed: out of memory (cudaErrorMemoryAllocation) at "
               "kernels/device_buffer.cuh:42");
  EXPECT_TRUE(error.is_out_of_memory());
  EXPECT_EQ(error.code(), cudaErrorMemoryAllocation);
  // A path outside the repository is kept whole.
  EXPECT_EQ(redline::path_from_repo_root("/elsewhere/x.cu"), "/elsewhere/x.cu");
}

#if defined(REDLINE_HAVE_CUBLASLT)
TEST(CudaCheck, CublasStatusIsNamed) {
  try {
    REDLINE_CUBLAS_CHECK(CUBLAS_STATUS_NOT_SUPPORTED);
    FAIL() << "did not throw";
  } catch (const redline::CublasError& error) {
    EXPECT_NE(std::string(error.what()).find("CUBLAS_STATUS_NOT_SUPPORTED) at tests/gpu/kernels_host_test.cpp:"),
              std::string::npos)
        << error.what();
    EXPECT_EQ(error.status(), CUBLAS_STATUS_NOT_SUPPORTED);
    EXPECT_FALSE(error.is_out_of_memory());
  }
  EXPECT_NO_THROW(REDLINE_CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS));
}
#endif

#if defined(REDLINE_HAVE_NCCL)
TEST(CudaCheck, NcclResultIsNamed) {
  try {
    REDLINE_NCCL_CHECK(ncclInvalidArgument);
    FAIL() << "did not throw";
  } catch (const redline::NcclError& error) {
    EXPECT_NE(std::string(error.what()).find("(ncclInvalidArgument) at tests/gpu/kernels_host_test.cpp:"),
              std::string::npos)
        << error.what();
    EXPECT_EQ(error.result(), ncclInvalidArgument);
  }
  EXPECT_NO_THROW(REDLINE_NCCL_CHECK(ncclSuccess));
}
#endif

TEST(DeviceQuery, AddCudaGpuInfoRecordsVersionsAndWhyNoGpu) {
  redline::Environment env;
  redline::add_cuda_gpu_info(env);
  int runtime = 0;
  ASSERT_EQ(cudaRuntimeGetVersion(&runtime), cudaSuccess);
  EXPECT_EQ(env.cuda_runtime_version, std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10));
#if defined(REDLINE_HAVE_CUBLASLT)
  EXPECT_FALSE(env.cublas_version.empty());
#endif
#if defined(REDLINE_HAVE_NCCL)
  EXPECT_FALSE(env.nccl_version.empty());
#endif
  if (cuda_reports_devices()) {
    EXPECT_FALSE(env.gpus.empty());
    EXPECT_EQ(env.gpu_source, "cuda");
  } else {
    EXPECT_TRUE(env.gpus.empty());
    EXPECT_NE(env.gpu_source.find("cudaGetDeviceCount"), std::string::npos) << env.gpu_source;
  }
  std::printf("cuda_runtime_version=%s cublas_version=%s nccl_version=%s gpu_source=%s\n",
              env.cuda_runtime_version.c_str(), env.cublas_version.c_str(), env.nccl_version.c_str(),
              env.gpu_source.c_str());
}

TEST(NvtxRange, OpensAndClosesWithoutAProfiler) {
  const redline::NvtxRange outer("kernels_host_test outer");
  { const redline::NvtxRange inner("kernels_host_test inner"); }
  SUCCEED();
}

TEST(RandomFill, RejectsRangesBeforeTouchingTheDevice) {
  // Validation runs first, so these throw even with no GPU and a null pointer.
  EXPECT_THROW(redline::random_fill<float>(nullptr, 16, 1, 1.0, 1.0), std::invalid_argument);
  EXPECT_THROW(redline::random_fill<float>(nullptr, 16, 1, 2.0, 1.0), std::invalid_argument);
  EXPECT_THROW(redline::random_fill<double>(nullptr, 16, 1, 0.0, INFINITY), std::invalid_argument);
  EXPECT_THROW(redline::random_fill<__nv_fp8_e4m3>(nullptr, 16, 1, 0.0, 1e-4), std::invalid_argument);
  EXPECT_THROW(redline::random_fill<std::int8_t>(nullptr, 16, 1, 0, 1), std::invalid_argument);
  EXPECT_THROW(redline::random_fill<std::int8_t>(nullptr, 16, 1, -200, 0), std::invalid_argument);
  EXPECT_THROW(redline::random_fill<std::int32_t>(nullptr, 16, 1, 5, 5), std::invalid_argument);
  try {
    redline::random_fill<__nv_fp8_e4m3>(nullptr, 16, 1, 0.0, 1e-4);
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("[0, 0.0001)"), std::string::npos) << error.what();
  }
  // An empty fill is valid and launches nothing.
  EXPECT_NO_THROW(redline::random_fill<float>(nullptr, 0, 1));
}

template <typename T>
class RandomValueAtFloating : public testing::Test {};
using FloatingTypes = testing::Types<float, double, __half, __nv_bfloat16, __nv_fp8_e4m3, __nv_fp8_e5m2>;
TYPED_TEST_SUITE(RandomValueAtFloating, FloatingTypes);

template <typename T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

TYPED_TEST(RandomValueAtFloating, ReproducibleNonZeroInRangeRoughlyUniform) {
  using T = TypeParam;
  constexpr std::uint64_t count = 200000;
  for (const auto& [lo, hi] : {std::pair{-1.0, 1.0}, std::pair{0.5, 4.0}, std::pair{-0.01, 0.01}}) {
    const double lowest = to_double(from_double<T>(lo));
    const double highest = to_double(from_double<T>(hi));
    double sum = 0.0;
    std::uint64_t below_midpoint = 0;
    std::uint64_t same_as_other_seed = 0;
    std::map<double, std::uint64_t> histogram;
    for (std::uint64_t i = 0; i < count; ++i) {
      const T value = random_value_at<T>(42, i, lo, hi);
      ASSERT_TRUE(same_bits(value, random_value_at<T>(42, i, lo, hi))) << "index " << i;
      const double x = to_double(value);
      ASSERT_NE(x, 0.0) << "index " << i;
      ASSERT_GE(x, lowest) << "index " << i;
      ASSERT_LE(x, highest) << "index " << i;
      sum += x;
      ++histogram[x];
      below_midpoint += x < (lo + hi) / 2 ? 1 : 0;
      same_as_other_seed += same_bits(value, random_value_at<T>(43, i, lo, hi)) ? 1 : 0;
    }
    const double width = hi - lo;
    EXPECT_NEAR(sum / count, (lo + hi) / 2, 0.02 * width) << "range [" << lo << ", " << hi << ")";
    EXPECT_NEAR(static_cast<double>(below_midpoint) / count, 0.5, 0.05) << "range [" << lo << ", " << hi << ")";
    // Independent seeds agree only by chance: with value probabilities p_v,
    // at a rate of sum(p_v^2), which is large when T has few values in range
    // (fp8 has about ten in [-0.01, 0.01)).
    double chance_agreement = 0.0;
    for (const auto& [value, n] : histogram) chance_agreement += std::pow(static_cast<double>(n) / count, 2);
    EXPECT_LT(static_cast<double>(same_as_other_seed), 1.2 * chance_agreement * count + 50)
        << "seeds 42 and 43 should give unrelated values in [" << lo << ", " << hi << ")";
  }
}

TEST(RandomValueAt, DoubleStaysBelowHiAndSpreadsOut) {
  std::set<double> distinct;
  for (std::uint64_t i = 0; i < 10000; ++i) {
    const double x = random_value_at<double>(5, i, 2.0, 3.0);
    ASSERT_GE(x, 2.0);
    ASSERT_LT(x, 3.0);
    distinct.insert(x);
  }
  EXPECT_EQ(distinct.size(), 10000u);  // 53 random bits: collisions would mean a broken hash
}

template <typename T>
class RandomValueAtInteger : public testing::Test {};
using IntegerTypes = testing::Types<std::int8_t, std::int32_t>;
TYPED_TEST_SUITE(RandomValueAtInteger, IntegerTypes);

TYPED_TEST(RandomValueAtInteger, NonZeroInRangeUniformOverNonZeroValues) {
  using T = TypeParam;
  constexpr std::int64_t lo = -3;
  constexpr std::int64_t hi = 4;  // non-zero values: -3 -2 -1 1 2 3
  constexpr std::uint64_t count = 60000;
  std::int64_t histogram[hi - lo] = {};
  for (std::uint64_t i = 0; i < count; ++i) {
    const T value = random_value_at<T>(11, i, lo, hi);
    ASSERT_EQ(value, random_value_at<T>(11, i, lo, hi));
    ASSERT_NE(value, 0);
    ASSERT_GE(value, lo);
    ASSERT_LT(value, hi);
    ++histogram[value - lo];
  }
  for (std::int64_t v = lo; v < hi; ++v) {
    if (v == 0) continue;
    EXPECT_NEAR(static_cast<double>(histogram[v - lo]), count / 6.0, count / 60.0) << "value " << v;
  }
  // [0, 2) holds one non-zero integer: every value is 1.
  for (std::uint64_t i = 0; i < 1000; ++i) ASSERT_EQ(random_value_at<T>(3, i, 0, 2), 1);
}

// checkpoint_bench marks a stage "oom" by this: the refusal before cudaMalloc
// and CUDA's own out-of-memory error count, other errors do not.
TEST(CheckpointCopy, OutOfMemoryIsRecognised) {
  EXPECT_TRUE(redline::is_gpu_out_of_memory(redline::GpuStateTooLarge("a state of 9 bytes does not fit")));
  EXPECT_TRUE(redline::is_gpu_out_of_memory(redline::CudaError(cudaErrorMemoryAllocation, "cudaMalloc", "here.cu", 1)));
  EXPECT_FALSE(redline::is_gpu_out_of_memory(redline::CudaError(cudaErrorInvalidValue, "cudaMemcpy", "here.cu", 2)));
  EXPECT_FALSE(redline::is_gpu_out_of_memory(std::runtime_error("disk full")));
}

}  // namespace
