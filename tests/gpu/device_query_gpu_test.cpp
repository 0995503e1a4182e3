// device_query and the checked-call macro on a real device.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "harness/core/environment.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/device_query.cuh"

namespace {

TEST(DeviceQuery, AgreesWithCudaGetDeviceProperties) {
  cudaDeviceProp prop{};
  REDLINE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const redline::DeviceProperties props = redline::query_device_properties(0);

  EXPECT_EQ(props.device, 0);
  EXPECT_EQ(props.name, prop.name);
  EXPECT_EQ(props.compute_capability_major, prop.major);
  EXPECT_EQ(props.compute_capability_minor, prop.minor);
  EXPECT_EQ(props.compute_capability(), std::to_string(prop.major) + "." + std::to_string(prop.minor));
  EXPECT_EQ(props.sm_count, prop.multiProcessorCount);
  EXPECT_EQ(props.l2_bytes, static_cast<std::uint64_t>(prop.l2CacheSize));
  EXPECT_EQ(props.memory_bytes, prop.totalGlobalMem);
  EXPECT_EQ(props.max_shared_memory_per_sm_bytes, prop.sharedMemPerMultiprocessor);
  EXPECT_EQ(props.max_shared_memory_per_block_optin_bytes, prop.sharedMemPerBlockOptin);
  EXPECT_EQ(props.memory_bus_width_bits.value_or(0), prop.memoryBusWidth);
  EXPECT_EQ(props.uuid.size(), std::string("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx").size());
  EXPECT_EQ(props.uuid.rfind("GPU-", 0), 0u);

  int clock_khz = 0;
  REDLINE_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  ASSERT_TRUE(props.max_sm_clock_mhz.has_value());
  EXPECT_EQ(*props.max_sm_clock_mhz, static_cast<unsigned>((clock_khz + 500) / 1000));
  EXPECT_GT(*props.max_sm_clock_mhz, 100u);
}

TEST(DeviceQuery, AddCudaGpuInfoListsEveryDevice) {
  int count = 0;
  REDLINE_CUDA_CHECK(cudaGetDeviceCount(&count));
  redline::Environment env;
  redline::add_cuda_gpu_info(env);

  ASSERT_EQ(env.gpus.size(), static_cast<std::size_t>(count));
  EXPECT_EQ(env.gpu_source, "cuda");
  for (const redline::GpuInfo& gpu : env.gpus) {
    EXPECT_GT(gpu.sm_count, 0) << gpu.name;
    EXPECT_GT(gpu.l2_bytes, 0u) << gpu.name;
    EXPECT_FALSE(gpu.compute_capability.empty()) << gpu.name;
    EXPECT_FALSE(gpu.name.empty());
    EXPECT_GT(gpu.memory_bytes, 0u);
  }
  int runtime = 0;
  REDLINE_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  EXPECT_EQ(env.cuda_runtime_version, std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10));
  EXPECT_FALSE(env.cuda_driver_version.empty());
#if defined(REDLINE_HAVE_CUBLASLT)
  EXPECT_FALSE(env.cublas_version.empty());
#endif
#if defined(REDLINE_HAVE_NCCL)
  EXPECT_FALSE(env.nccl_version.empty());
#endif
}

TEST(DeviceQuery, AddCudaGpuInfoKeepsNvmlReadings) {
  const redline::DeviceProperties device0 = redline::query_device_properties(0);
  int count = 0;
  REDLINE_CUDA_CHECK(cudaGetDeviceCount(&count));

  // What NVML would have filled for the same GPU: its readings must survive.
  redline::Environment env;
  env.gpu_source = "nvml";
  redline::GpuInfo from_nvml;
  from_nvml.index = 7;  // NVML's index need not equal the CUDA ordinal
  from_nvml.uuid = device0.uuid;
  from_nvml.name = "name from NVML";
  from_nvml.memory_bytes = 12345;
  from_nvml.max_sm_clock_mhz = 999;
  from_nvml.temperature_c = 42;
  env.gpus.push_back(from_nvml);

  redline::add_cuda_gpu_info(env);
  ASSERT_EQ(env.gpus.size(), static_cast<std::size_t>(count));  // merged, not duplicated
  const redline::GpuInfo& merged = env.gpus.front();
  EXPECT_EQ(merged.index, 7);
  EXPECT_EQ(merged.name, "name from NVML");
  EXPECT_EQ(merged.memory_bytes, 12345u);
  EXPECT_EQ(merged.max_sm_clock_mhz, 999u);
  EXPECT_EQ(merged.temperature_c, 42u);
  EXPECT_EQ(merged.sm_count, device0.sm_count);
  EXPECT_EQ(merged.l2_bytes, device0.l2_bytes);
  EXPECT_EQ(merged.compute_capability, device0.compute_capability());
  EXPECT_EQ(env.gpu_source, "nvml+cuda");
}

TEST(CudaCheck, OutOfMemoryNamesCallFileAndLine) {
  void* pointer = nullptr;
  const std::size_t absurd_bytes = std::size_t{1} << 60;  // an exabyte: no GPU has it
  const int line = __LINE__ + 2;
  try {
    REDLINE_CUDA_CHECK(cudaMalloc(&pointer, absurd_bytes));
    FAIL() << "cudaMalloc of 1 EiB succeeded";
  } catch (const redline::CudaError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("cudaMalloc(&pointer, absurd_bytes) failed"), std::string::npos) << what;
    EXPECT_NE(what.find("cudaErrorMemoryAllocation"), std::string::npos) << what;
    EXPECT_NE(what.find("tests/gpu/device_query_gpu_test.cpp:" + std::to_string(line)), std::string::npos) << what;
    EXPECT_EQ(what.find("/tests/gpu/"), std::string::npos) << "path should be relative to the repo root: " << what;
    EXPECT_EQ(error.code(), cudaErrorMemoryAllocation);
    EXPECT_TRUE(error.is_out_of_memory());
  }
  // The failure was reported; it must not linger for the next launch check.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
