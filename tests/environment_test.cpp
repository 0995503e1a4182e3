// The environment record: what this machine really reports, the variables
// that matter, NVML with or without a driver, run ids and GPU summaries.
#include "harness/core/environment.hpp"
#include "tests/support.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace redline {
namespace {

bool nvml_loadable() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return false;
  dlclose(lib);
  return true;
}

GpuInfo gpu_named(const std::string& name) {
  GpuInfo g;
  g.name = name;
  return g;
}

// Sets variables for one test and puts the environment back afterwards.
class EnvironmentVariablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kNames) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) setenv(name.c_str(), value->c_str(), 1);
      else unsetenv(name.c_str());
    }
  }
  static constexpr const char* kNames[] = {"NCCL_REDLINE_TEST_DEBUG",    "NCCL_REDLINE_TEST_ALGO",
                                           "CUDA_VISIBLE_DEVICES",       "REDLINE_TEST_UNRELATED",
                                           "MY_NCCL_REDLINE_TEST",       "NCCLX_REDLINE_TEST",
                                           "OMPI_MCA_btl_redline_test",  "OMPI_MCA_coll_redline_test",
                                           "OMPI_MCA_orte_redline_test", "UCX_REDLINE_TEST",
                                           "FI_REDLINE_TEST",            "OMPI_MCA_btl",
                                           "OMPI_MCA_pml",               "OMPI_MCA_mtl_redline_test",
                                           "OMPI_MCA_smsc",              "OMPI_MCA_mpi_leave_pinned",
                                           "OMPI_MCA_pmix_redline_test"};
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(UtcTimestamp, Iso8601Utc) {
  const std::string ts = utc_timestamp();
  EXPECT_TRUE(std::regex_match(ts, std::regex(R"(\d{4}-(0[1-9]|1[0-2])-[0-3]\dT[0-2]\d:[0-5]\d:[0-6]\dZ)"))) << ts;
  EXPECT_GE(ts.substr(0, 4), "2024");
}

TEST(CaptureEnvironment, FillsTheHostFields) {
  const Environment env = capture_environment();
  EXPECT_TRUE(std::regex_match(env.timestamp_utc, std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)")))
      << env.timestamp_utc;
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  EXPECT_EQ(env.host, host);
  EXPECT_FALSE(env.os.empty());
  EXPECT_NE(env.os, "unknown");
  EXPECT_GT(env.cpu_count, 0);
  EXPECT_FALSE(env.cpu_model.empty());
  EXPECT_TRUE(std::regex_match(env.redline_version, std::regex(R"(\d+\.\d+\.\d+)"))) << env.redline_version;
  EXPECT_FALSE(env.git_sha.empty());
  EXPECT_FALSE(env.gpu_source.empty());
}

TEST(CaptureEnvironment, GpuSourceSaysWhereGpuInfoCameFrom) {
  const Environment env = capture_environment();
  if (nvml_loadable()) {
    EXPECT_EQ(env.gpu_source, "nvml");
  } else {
    EXPECT_EQ(env.gpu_source.rfind("none: ", 0), 0u) << env.gpu_source;
    EXPECT_CONTAINS(env.gpu_source, "libnvidia-ml");
    EXPECT_TRUE(env.gpus.empty());
    EXPECT_EQ(env.gpu_summary(), "none");
  }
}

TEST_F(EnvironmentVariablesTest, PicksNcclAndCudaVariablesOnly) {
  setenv("NCCL_REDLINE_TEST_DEBUG", "INFO", 1);
  setenv("NCCL_REDLINE_TEST_ALGO", "Ring,Tree", 1);
  setenv("CUDA_VISIBLE_DEVICES", "0,1", 1);
  setenv("REDLINE_TEST_UNRELATED", "1", 1);
  setenv("MY_NCCL_REDLINE_TEST", "1", 1);
  setenv("NCCLX_REDLINE_TEST", "1", 1);
  const auto vars = relevant_variables();
  ASSERT_EQ(vars.count("NCCL_REDLINE_TEST_DEBUG"), 1u);
  EXPECT_EQ(vars.at("NCCL_REDLINE_TEST_DEBUG"), "INFO");
  ASSERT_EQ(vars.count("NCCL_REDLINE_TEST_ALGO"), 1u);
  EXPECT_EQ(vars.at("NCCL_REDLINE_TEST_ALGO"), "Ring,Tree");
  ASSERT_EQ(vars.count("CUDA_VISIBLE_DEVICES"), 1u);
  EXPECT_EQ(vars.at("CUDA_VISIBLE_DEVICES"), "0,1");
  EXPECT_EQ(vars.count("REDLINE_TEST_UNRELATED"), 0u);
  EXPECT_EQ(vars.count("MY_NCCL_REDLINE_TEST"), 0u);
  EXPECT_EQ(vars.count("NCCLX_REDLINE_TEST"), 0u);
  EXPECT_EQ(vars.count("PATH"), 0u);
  EXPECT_EQ(vars.count("HOME"), 0u);
}

// mpirun --mca NAME VALUE reaches the ranks as OMPI_MCA_NAME: the transport
// and collective choices change host figures; the launcher's own wiring does not.
TEST_F(EnvironmentVariablesTest, PicksMpiTransportVariablesButNotLauncherInternals) {
  setenv("OMPI_MCA_btl_redline_test", "none", 1);
  setenv("OMPI_MCA_btl", "^vader", 1);  // --mca btl ^vader: the framework's own name
  setenv("OMPI_MCA_pml", "ob1", 1);
  setenv("OMPI_MCA_mtl_redline_test", "1", 1);
  setenv("OMPI_MCA_smsc", "^cma", 1);  // Open MPI 5's single-copy framework
  setenv("OMPI_MCA_coll_redline_test", "1", 1);
  setenv("OMPI_MCA_mpi_leave_pinned", "1", 1);
  setenv("UCX_REDLINE_TEST", "shm", 1);
  setenv("FI_REDLINE_TEST", "efa", 1);
  setenv("OMPI_MCA_orte_redline_test", "tcp://10.0.0.1:1234", 1);
  setenv("OMPI_MCA_pmix_redline_test", "x", 1);
  const auto vars = relevant_variables();
  for (const char* name : {"OMPI_MCA_btl_redline_test", "OMPI_MCA_btl", "OMPI_MCA_pml", "OMPI_MCA_mtl_redline_test",
                           "OMPI_MCA_smsc", "OMPI_MCA_coll_redline_test", "OMPI_MCA_mpi_leave_pinned",
                           "UCX_REDLINE_TEST", "FI_REDLINE_TEST"}) {
    EXPECT_EQ(vars.count(name), 1u) << name;
    EXPECT_TRUE(steers_communication(name)) << name;
  }
  EXPECT_EQ(vars.at("OMPI_MCA_btl"), "^vader");
  EXPECT_EQ(vars.count("OMPI_MCA_orte_redline_test"), 0u);
  EXPECT_EQ(vars.count("OMPI_MCA_pmix_redline_test"), 0u);
}

// The collective header names what steers the data's path, not the device list.
TEST(SteersCommunication, NcclAndMpiVariablesOnly) {
  EXPECT_TRUE(steers_communication("NCCL_ALGO"));
  EXPECT_FALSE(steers_communication("CUDA_VISIBLE_DEVICES"));
  EXPECT_FALSE(steers_communication("OMPI_COMM_WORLD_SIZE"));
  EXPECT_FALSE(steers_communication("OMPI_MCA_orte_hnp_uri"));
  EXPECT_FALSE(steers_communication("MY_NCCL_ALGO"));
}

TEST_F(EnvironmentVariablesTest, CaptureRecordsTheVariables) {
  setenv("NCCL_REDLINE_TEST_DEBUG", "WARN", 1);
  const Environment env = capture_environment();
  ASSERT_EQ(env.variables.count("NCCL_REDLINE_TEST_DEBUG"), 1u);
  EXPECT_EQ(env.variables.at("NCCL_REDLINE_TEST_DEBUG"), "WARN");
}

TEST_F(EnvironmentVariablesTest, EmptyValueIsStillRecorded) {
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  const auto vars = relevant_variables();
  ASSERT_EQ(vars.count("CUDA_VISIBLE_DEVICES"), 1u);
  EXPECT_EQ(vars.at("CUDA_VISIBLE_DEVICES"), "");
}

TEST(AddNvmlGpuInfo, ReportsWhyOrFillsGpus) {
  Environment env;
  env.gpus = {gpu_named("placeholder")};
  env.gpu_source = "before";
  const auto why_not = add_nvml_gpu_info(env);
  if (!nvml_loadable()) {
    ASSERT_TRUE(why_not.has_value());
    EXPECT_CONTAINS(*why_not, "libnvidia-ml");
    // Unusable NVML leaves the environment as it was.
    ASSERT_EQ(env.gpus.size(), 1u);
    EXPECT_EQ(env.gpus[0].name, "placeholder");
    EXPECT_EQ(env.gpu_source, "before");
    EXPECT_TRUE(env.driver_version.empty());
  } else {
    ASSERT_FALSE(why_not.has_value()) << *why_not;
    EXPECT_EQ(env.gpu_source, "nvml");
    EXPECT_FALSE(env.driver_version.empty());
    ASSERT_FALSE(env.gpus.empty());
    for (std::size_t i = 0; i < env.gpus.size(); ++i) {
      const GpuInfo& g = env.gpus[i];
      EXPECT_EQ(g.index, static_cast<int>(i));
      EXPECT_NE(g.name, "placeholder");
      EXPECT_FALSE(g.name.empty());
      EXPECT_GT(g.memory_bytes, 0u);
      EXPECT_TRUE(std::regex_match(g.compute_capability, std::regex(R"(\d+\.\d+)"))) << g.compute_capability;
    }
  }
}

// This process holds no CUDA context, so NVML lists none of its memory; and
// without a driver there is nothing to ask. Either way: no figure, never 0.
TEST(NvmlSession, ProcessMemoryOfAProcessWithoutAContextIsUnknown) {
  const NvmlSession nvml;
  if (!nvml_loadable()) EXPECT_TRUE(nvml.unavailable().has_value());
  EXPECT_FALSE(nvml.process_memory({static_cast<int>(getpid())}).has_value());
  EXPECT_FALSE(nvml.process_memory({}).has_value());
}

TEST(MakeRunId, TimestampHostAndPid) {
  const std::string id = make_run_id("node-1.example_x");
  const std::string pid = std::to_string(getpid());
  EXPECT_TRUE(std::regex_match(id, std::regex(R"(\d{8}T\d{6}Z-node-1\.example_x-)" + pid))) << id;
}

TEST(MakeRunId, HostIsMadeSafeForFileNames) {
  const std::string id = make_run_id("my host/a:b");
  EXPECT_TRUE(std::regex_match(id, std::regex(R"(\d{8}T\d{6}Z-my-host-a-b-\d+)"))) << id;
}

TEST(GpuSummary, NoneOneSameAndMixed) {
  Environment env;
  EXPECT_EQ(env.gpu_summary(), "none");
  env.gpus = {gpu_named("NVIDIA H200")};
  EXPECT_EQ(env.gpu_summary(), "NVIDIA H200");
  env.gpus = {gpu_named("NVIDIA H100 80GB HBM3"), gpu_named("NVIDIA H100 80GB HBM3")};
  EXPECT_EQ(env.gpu_summary(), "2x NVIDIA H100 80GB HBM3");
  env.gpus.assign(8, gpu_named("NVIDIA H100 80GB HBM3"));
  EXPECT_EQ(env.gpu_summary(), "8x NVIDIA H100 80GB HBM3");
  env.gpus = {gpu_named("NVIDIA H100 80GB HBM3"), gpu_named("NVIDIA A100-SXM4-40GB"), gpu_named("NVIDIA H100 80GB HBM3")};
  EXPECT_EQ(env.gpu_summary(), "NVIDIA H100 80GB HBM3 + NVIDIA A100-SXM4-40GB + NVIDIA H100 80GB HBM3");
}

}  // namespace
}  // namespace redline
