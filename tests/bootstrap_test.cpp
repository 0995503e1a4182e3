// Launcher detection from each launcher's variables, the single bootstrap,
// and the env (TCP) bootstrap: its variable checks, its rendezvous checks
// with ranks as threads, and real runs of three processes
// (env_bootstrap_check) where a rank exits, hangs or aborts, or where the
// watchdog, on the bootstrap's own connections, meets a rank stopped by a
// real SIGSTOP. Then the control links and the watchdog in this process,
// with the test as the one peer: what each does at the edges of its life.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "collectives/bootstrap/bootstrap.hpp"
#include "collectives/bootstrap/env_bootstrap.hpp"
#include "collectives/watchdog/rank_links.hpp"
#include "collectives/bootstrap/single_bootstrap.hpp"
#include "collectives/bootstrap/tcp.hpp"
#include "collectives/watchdog/watchdog.hpp"
#include "harness/core/child_process.hpp"
#include "harness/core/clock.hpp"
#include "tests/support.hpp"

namespace redline {
namespace {

// Every variable a launcher or torchrun sets, cleared for each test and
// restored after it.
class LaunchEnv : public ::testing::Test {
 protected:
  static constexpr const char* kVars[] = {
      "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_SIZE", "PMI_RANK",
      "MPI_LOCALRANKID", "PMIX_RANK", "SLURM_STEP_ID", "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID",
      "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};

  void SetUp() override {
    for (const char* name : kVars) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (const char* name : kVars) unsetenv(name);
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }
  static void set(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }

  // The message of the runtime_error `f` throws ("" when it does not).
  static std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }

 private:
  std::map<std::string, std::string> saved_;
};

// ---------------------------------------------------------------------------
// detect_launch

using DetectLaunch = LaunchEnv;

TEST_F(DetectLaunch, NoLauncher) {
  const auto info = detect_launch();
  EXPECT_EQ(info.launcher, "none");
  EXPECT_EQ(info.world_size, 1);
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.local_rank, 0);
}

TEST_F(DetectLaunch, OpenMpi) {
  set("OMPI_COMM_WORLD_SIZE", "4");
  set("OMPI_COMM_WORLD_RANK", "2");
  set("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  set("PMIX_RANK", "2");  // Open MPI's mpirun sets it too
  const auto info = detect_launch();
  EXPECT_EQ(info.launcher, "mpirun (Open MPI)");
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.local_rank, 1);
}

TEST_F(DetectLaunch, MpichHydra) {
  set("PMI_SIZE", "8");
  set("PMI_RANK", "5");
  set("MPI_LOCALRANKID", "1");
  const auto info = detect_launch();
  EXPECT_EQ(info.launcher, "mpiexec (MPICH/PMI)");
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.local_rank, 1);
}

TEST_F(DetectLaunch, PmiUnderSrunTakesSlurmLocalId) {
  set("PMI_SIZE", "8");
  set("PMI_RANK", "7");
  set("SLURM_STEP_ID", "0");
  set("SLURM_NTASKS", "8");
  set("SLURM_PROCID", "7");
  set("SLURM_LOCALID", "3");
  const auto info = detect_launch();
  EXPECT_EQ(info.launcher, "mpiexec (MPICH/PMI)");
  EXPECT_EQ(info.rank, 7);
  EXPECT_EQ(info.local_rank, 3);
}

TEST_F(DetectLaunch, Srun) {
  set("SLURM_STEP_ID", "0");
  set("SLURM_NTASKS", "16");
  set("SLURM_PROCID", "9");
  set("SLURM_LOCALID", "1");
  const auto info = detect_launch();
  EXPECT_EQ(info.launcher, "srun");
  EXPECT_EQ(info.world_size, 16);
  EXPECT_EQ(info.rank, 9);
  EXPECT_EQ(info.local_rank, 1);
}

TEST_F(DetectLaunch, SlurmAllocationWithoutSrunIsNoLauncher) {
  set("SLURM_NTASKS", "16");  // sbatch/salloc: one process, not a task of srun
  set("SLURM_PROCID", "0");
  EXPECT_EQ(detect_launch().launcher, "none");
  EXPECT_EQ(detect_launch().world_size, 1);
}

TEST_F(DetectLaunch, MpirunInsideSrunStepIsOpenMpi) {
  // mpirun's daemons start through srun, so its ranks inherit SLURM_STEP_ID
  // with SLURM_NTASKS counting daemons.
  set("SLURM_STEP_ID", "3");
  set("SLURM_NTASKS", "2");
  set("SLURM_PROCID", "1");
  set("OMPI_COMM_WORLD_SIZE", "16");
  set("OMPI_COMM_WORLD_RANK", "12");
  const auto info = detect_launch();
  EXPECT_EQ(info.launcher, "mpirun (Open MPI)");
  EXPECT_EQ(info.world_size, 16);
  EXPECT_EQ(info.local_rank, 0);  // OMPI_COMM_WORLD_LOCAL_RANK unset
}

TEST_F(DetectLaunch, Pmix) {
  set("PMIX_RANK", "3");
  const auto info = detect_launch();
  EXPECT_EQ(info.launcher, "PMIx launcher");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.world_size, 4);  // a lower bound: PMIx publishes no size
}

TEST_F(DetectLaunch, Torchrun) {
  set("WORLD_SIZE", "4");
  set("RANK", "3");
  set("LOCAL_RANK", "1");
  const auto info = detect_launch();
  EXPECT_EQ(info.launcher, "torchrun-style env");
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.local_rank, 1);
}

TEST_F(DetectLaunch, MpiWinsOverTorchrunVariables) {
  set("WORLD_SIZE", "2");
  set("RANK", "1");
  set("PMI_SIZE", "6");
  set("PMI_RANK", "0");
  EXPECT_EQ(detect_launch().launcher, "mpiexec (MPICH/PMI)");
  EXPECT_EQ(detect_launch().world_size, 6);
}

TEST_F(DetectLaunch, MalformedNumbersNameTheVariableAndValue) {
  set("OMPI_COMM_WORLD_SIZE", "abc");
  set("OMPI_COMM_WORLD_RANK", "0");
  EXPECT_CONTAINS(error_of([] { detect_launch(); }), "OMPI_COMM_WORLD_SIZE='abc'");
  set("OMPI_COMM_WORLD_SIZE", "");
  EXPECT_CONTAINS(error_of([] { detect_launch(); }), "OMPI_COMM_WORLD_SIZE=''");
  set("OMPI_COMM_WORLD_SIZE", " 4");
  EXPECT_CONTAINS(error_of([] { detect_launch(); }), "OMPI_COMM_WORLD_SIZE=' 4'");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("OMPI_COMM_WORLD_RANK");

  set("SLURM_STEP_ID", "0");
  set("SLURM_NTASKS", "4");
  set("SLURM_PROCID", "99999999999");
  EXPECT_CONTAINS(error_of([] { detect_launch(); }), "SLURM_PROCID='99999999999' is not a non-negative integer");
  set("SLURM_PROCID", "1");
  set("SLURM_LOCALID", "x1");
  EXPECT_CONTAINS(error_of([] { detect_launch(); }), "SLURM_LOCALID='x1'");
  unsetenv("SLURM_STEP_ID");

  set("WORLD_SIZE", "4");
  set("RANK", "-1");
  EXPECT_CONTAINS(error_of([] { detect_launch(); }), "RANK='-1'");
  set("PMIX_RANK", "three");
  EXPECT_CONTAINS(error_of([] { detect_launch(); }), "PMIX_RANK='three'");
}

TEST_F(DetectLaunch, InconsistentValuesAreErrors) {
  set("WORLD_SIZE", "4");
  set("RANK", "4");
  EXPECT_CONTAINS(error_of([] { detect_launch(); }), "RANK=4 is out of range for WORLD_SIZE=4");
  set("WORLD_SIZE", "0");
  set("RANK", "0");
  EXPECT_CONTAINS(error_of([] { detect_launch(); }), "WORLD_SIZE='0' must be at least 1");
  unsetenv("WORLD_SIZE");
  EXPECT_CONTAINS(error_of([] { detect_launch(); }), "RANK is set but WORLD_SIZE is not");
  unsetenv("RANK");
  set("PMI_SIZE", "2");
  EXPECT_CONTAINS(error_of([] { detect_launch(); }), "PMI_SIZE is set but PMI_RANK is not");
}

// ---------------------------------------------------------------------------
// single bootstrap

TEST(SingleBootstrap, IsAWorldOfOne) {
  auto b = make_single_bootstrap();
  EXPECT_EQ(b->kind(), "single");
  EXPECT_EQ(b->rank(), 0);
  EXPECT_EQ(b->size(), 1);
  EXPECT_EQ(b->local_rank(), 0);
  EXPECT_EQ(b->local_size(), 1);
  const int value = 42;
  const auto all = b->all_gather(&value, sizeof value);
  ASSERT_EQ(all.size(), sizeof value);
  EXPECT_EQ(*reinterpret_cast<const int*>(all.data()), 42);
  int data = 7;
  b->broadcast(&data, sizeof data, 0);
  EXPECT_EQ(data, 7);
  EXPECT_THROW(b->broadcast(&data, sizeof data, 1), std::runtime_error);
  b->barrier();
}

TEST(SingleBootstrap, AbortAllExitsWithTheCode) {
  EXPECT_EXIT(make_single_bootstrap()->abort_all(7), ::testing::ExitedWithCode(7), "");
}

// ---------------------------------------------------------------------------
// env bootstrap: variables

using EnvVariables = LaunchEnv;

TEST_F(EnvVariables, MissingVariablesAreNamed) {
  EXPECT_CONTAINS(error_of([] { make_env_bootstrap(); }), "RANK is not set");
  set("RANK", "0");
  EXPECT_CONTAINS(error_of([] { make_env_bootstrap(); }), "WORLD_SIZE is not set");
  set("WORLD_SIZE", "2");
  EXPECT_CONTAINS(error_of([] { make_env_bootstrap(); }), "LOCAL_RANK is not set");
  set("LOCAL_RANK", "0");
  EXPECT_CONTAINS(error_of([] { make_env_bootstrap(); }), "MASTER_ADDR is not set");
  set("MASTER_ADDR", "127.0.0.1");
  EXPECT_CONTAINS(error_of([] { make_env_bootstrap(); }), "MASTER_PORT is not set");
}

TEST_F(EnvVariables, MalformedVariablesAreNamedWithTheirValue) {
  set("RANK", "0");
  set("WORLD_SIZE", "two");
  set("LOCAL_RANK", "0");
  set("MASTER_ADDR", "127.0.0.1");
  set("MASTER_PORT", "29500");
  EXPECT_CONTAINS(error_of([] { make_env_bootstrap(); }), "WORLD_SIZE='two' is not a non-negative integer");
  set("WORLD_SIZE", "3");
  set("RANK", "3");
  EXPECT_CONTAINS(error_of([] { make_env_bootstrap(); }), "RANK=3 is out of range for WORLD_SIZE=3");
  set("RANK", "1");
  set("MASTER_PORT", "70000");
  EXPECT_CONTAINS(error_of([] { make_env_bootstrap(); }), "MASTER_PORT='70000' is not a port number");
  set("MASTER_PORT", "http");
  EXPECT_CONTAINS(error_of([] { make_env_bootstrap(); }), "MASTER_PORT='http'");
  set("MASTER_PORT", "29500");
  set("MASTER_ADDR", "");
  EXPECT_CONTAINS(error_of([] { make_env_bootstrap(); }), "MASTER_ADDR is empty");
  set("MASTER_ADDR", "127.0.0.1");
  set("LOCAL_WORLD_SIZE", "2");
  set("LOCAL_RANK", "2");
  EXPECT_CONTAINS(error_of([] { make_env_bootstrap(); }), "LOCAL_RANK=2 is out of range for LOCAL_WORLD_SIZE=2");
  set("LOCAL_WORLD_SIZE", "0");
  EXPECT_CONTAINS(error_of([] { make_env_bootstrap(); }), "LOCAL_WORLD_SIZE='0' must be at least 1");
}

TEST_F(EnvVariables, WorldOfOneNeedsNoMaster) {
  set("RANK", "0");
  set("WORLD_SIZE", "1");
  set("LOCAL_RANK", "0");
  auto b = make_env_bootstrap();
  EXPECT_EQ(b->kind(), "env");
  EXPECT_EQ(b->size(), 1);
  EXPECT_EQ(b->local_size(), 1);
  const int value = 5;
  EXPECT_EQ(b->all_gather(&value, sizeof value).size(), sizeof value);
  b->barrier();
}

// ---------------------------------------------------------------------------
// env bootstrap: ranks as threads of this process

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

EnvRendezvousConfig rank_config(int rank, int world_size, int port, const std::string& host, int local_rank) {
  EnvRendezvousConfig c;
  c.rank = rank;
  c.world_size = world_size;
  c.local_rank = local_rank;
  c.master_addr = "127.0.0.1";
  c.master_port = port;
  c.host_name = host;
  return c;
}

// Runs each config as a rank on its own thread; returns each rank's error
// ("" when `body` finished).
std::vector<std::string> run_ranks(const std::vector<EnvRendezvousConfig>& configs,
                                   const std::function<void(Bootstrap&, int)>& body, double connect_timeout = 10,
                                   double io_timeout = 10) {
  std::vector<std::future<std::string>> ranks;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    ranks.push_back(std::async(std::launch::async, [&, i] {
      try {
        auto b = make_env_bootstrap(configs[i], connect_timeout, io_timeout);
        body(*b, static_cast<int>(i));
      } catch (const std::exception& e) {
        return std::string(e.what());
      }
      return std::string();
    }));
  }
  std::vector<std::string> errors;
  for (auto& r : ranks) errors.push_back(r.get());
  return errors;
}

TEST(EnvBootstrapThreads, OperationsAndLocalRanks) {
  const int port = free_port();
  std::vector<EnvRendezvousConfig> configs;
  const char* hosts[] = {"node-a", "node-a", "node-b", "node-b"};
  for (int r = 0; r < 4; ++r) configs.push_back(rank_config(r, 4, port, hosts[r], r % 2));
  std::vector<std::vector<int>> seen(4);
  const auto errors = run_ranks(configs, [&](Bootstrap& b, int i) {
    EXPECT_EQ(b.kind(), "env");
    EXPECT_EQ(b.rank(), i);
    EXPECT_EQ(b.size(), 4);
    EXPECT_EQ(b.local_rank(), i % 2);
    EXPECT_EQ(b.local_size(), 2);  // counted from the host names
    for (int round = 0; round < 3; ++round) {
      // A large payload arrives in many pieces.
      std::vector<int> mine(300000, i * 10 + round);
      const auto all = b.all_gather(mine.data(), mine.size() * sizeof(int));
      ASSERT_EQ(all.size(), 4 * mine.size() * sizeof(int));
      for (int r = 0; r < 4; ++r) {
        const int* block = reinterpret_cast<const int*>(all.data()) + r * mine.size();
        EXPECT_EQ(block[0], r * 10 + round);
        EXPECT_EQ(block[mine.size() - 1], r * 10 + round);
      }
      std::vector<char> data(100000, static_cast<char>(i));
      b.broadcast(data.data(), data.size(), 2);
      EXPECT_EQ(data.front(), 2);
      EXPECT_EQ(data.back(), 2);
      int small = i;
      b.broadcast(&small, sizeof small, 0);
      EXPECT_EQ(small, 0);
      b.barrier();
      seen[static_cast<std::size_t>(i)].push_back(round);
    }
    EXPECT_THROW(b.broadcast(&i, sizeof i, 4), std::runtime_error);
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
    EXPECT_EQ(seen[static_cast<std::size_t>(r)].size(), 3u);
  }
}

TEST(EnvBootstrapThreads, LocalWorldSizeWinsOverHostNames) {
  const int port = free_port();
  std::vector<EnvRendezvousConfig> configs;
  for (int r = 0; r < 2; ++r) {
    configs.push_back(rank_config(r, 2, port, "host-" + std::to_string(r), 0));
    configs.back().local_world_size = 1;
  }
  const auto errors = run_ranks(configs, [](Bootstrap& b, int) { EXPECT_EQ(b.local_size(), 1); });
  EXPECT_EQ(errors, std::vector<std::string>(2, ""));
}

TEST(EnvBootstrapThreads, WorldSizeMismatchNamesBoth) {
  const int port = free_port();
  const auto errors = run_ranks({rank_config(0, 2, port, "a", 0), rank_config(1, 3, port, "b", 0)},
                                [](Bootstrap&, int) {});
  for (const auto& e : errors)
    EXPECT_CONTAINS(e, "rank 1 (host b) has WORLD_SIZE=3 but rank 0 (host a) has WORLD_SIZE=2");
}

TEST(EnvBootstrapThreads, DuplicateRankIsAnError) {
  const int port = free_port();
  const auto errors = run_ranks(
      {rank_config(0, 3, port, "a", 0), rank_config(1, 3, port, "b", 0), rank_config(1, 3, port, "c", 0)},
      [](Bootstrap&, int) {});
  for (const auto& e : errors) EXPECT_CONTAINS(e, "RANK=1 joined twice");
}

TEST(EnvBootstrapThreads, DuplicateLocalRankOnOneHostIsAnError) {
  const int port = free_port();
  const auto errors =
      run_ranks({rank_config(0, 2, port, "same", 0), rank_config(1, 2, port, "same", 0)}, [](Bootstrap&, int) {});
  for (const auto& e : errors) EXPECT_CONTAINS(e, "rank 0 and rank 1 both run on host same with LOCAL_RANK=0");
}

TEST(EnvBootstrapThreads, DifferentCallsAreNamedAndEndTheBootstrap) {
  const int port = free_port();
  std::vector<std::string> later(2);
  const auto errors = run_ranks({rank_config(0, 2, port, "a", 0), rank_config(1, 2, port, "b", 0)},
                                [&](Bootstrap& b, int i) {
                                  try {
                                    if (i == 0) {
                                      b.barrier();
                                    } else {
                                      const int x = 1;
                                      b.all_gather(&x, sizeof x);
                                    }
                                  } catch (const std::runtime_error&) {
                                    try {
                                      b.barrier();
                                    } catch (const std::runtime_error& e) {
                                      later[static_cast<std::size_t>(i)] = e.what();
                                    }
                                    throw;
                                  }
                                });
  for (const auto& e : errors)
    EXPECT_CONTAINS(e, "rank 1 (host b) called all_gather (bootstrap call #0) where rank 0 called barrier "
                             "(bootstrap call #0)");
  for (const auto& e : later) EXPECT_CONTAINS(e, "unusable after an earlier error");
}

TEST(EnvBootstrapThreads, DifferentByteCountsAreAnError) {
  const int port = free_port();
  const auto errors = run_ranks({rank_config(0, 2, port, "a", 0), rank_config(1, 2, port, "b", 0)},
                                [&](Bootstrap& b, int i) {
                                  const long long x[2] = {1, 2};
                                  b.all_gather(x, i == 0 ? 16 : 8);
                                });
  for (const auto& e : errors) EXPECT_CONTAINS(e, "rank 1 (host b) passed 8 bytes to all_gather");
}

TEST(EnvBootstrapThreads, SilentRankTimesOutNamingIt) {
  const int port = free_port();
  const auto errors = run_ranks(
      {rank_config(0, 2, port, "a", 0), rank_config(1, 2, port, "b", 0)},
      [&](Bootstrap& b, int i) {
        if (i == 0) b.barrier();
        else std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      },
      10, 0.5);
  // The message names the 0.5 s I/O timeout: it gave up then, not at the 10 s connect limit.
  EXPECT_CONTAINS(errors[0], "timed out after 0.5 s waiting for rank 1 (host b) during barrier");
}

TEST(EnvBootstrapThreads, RankWithoutRankZeroGivesUpAfterConnectTimeout) {
  const int port = free_port();
  EnvRendezvousConfig c = rank_config(1, 2, port, "b", 0);
  std::string error;
  try {
    make_env_bootstrap(c, 0.5, 10);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  EXPECT_CONTAINS(error, "rank 1 (host b) could not connect to rank 0 at MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                               std::to_string(port) + " within 0.5 s");
}

TEST(EnvBootstrapThreads, RankZeroNamesTheRanksThatNeverCame) {
  const int port = free_port();
  std::string error;
  try {
    make_env_bootstrap(rank_config(0, 3, port, "a", 0), 0.5, 10);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  EXPECT_CONTAINS(error, "timed out after 0.5 s waiting for ranks 1, 2 to connect to port " +
                               std::to_string(port));
}

TEST(EnvBootstrapThreads, PortInUseIsNamed) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  std::string error;
  try {
    make_env_bootstrap(rank_config(0, 2, port, "a", 0), 0.5, 10);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  close(fd);
  EXPECT_CONTAINS(error, "cannot listen on port " + std::to_string(port));
  EXPECT_CONTAINS(error, "Address already in use");
}

// ---------------------------------------------------------------------------
// env bootstrap: real processes

// Starts `world_size` ranks of env_bootstrap_check with `args`; `env_for`
// may change one rank's variables.
std::vector<ChildResult> run_processes(
    int world_size, const std::vector<std::string>& args,
    const std::function<void(int, std::vector<std::pair<std::string, std::string>>&)>& env_for = nullptr) {
  const int port = free_port();
  std::vector<std::future<ChildResult>> runs;
  for (int r = 0; r < world_size; ++r) {
    ChildSpec spec;
    spec.argv = {ENV_BOOTSTRAP_CHECK_BIN};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.extra_env = {{"RANK", std::to_string(r)},
                      {"WORLD_SIZE", std::to_string(world_size)},
                      {"LOCAL_RANK", std::to_string(r)},
                      {"MASTER_ADDR", "127.0.0.1"},
                      {"MASTER_PORT", std::to_string(port)}};
    if (env_for) env_for(r, spec.extra_env);
    spec.timeout_seconds = 60;
    runs.push_back(std::async(std::launch::async, [spec] { return run_child(spec); }));
  }
  std::vector<ChildResult> results;
  for (auto& run : runs) results.push_back(run.get());
  return results;
}

std::string describe(const ChildResult& r) { return r.describe_end() + "\n" + r.output; }

TEST(EnvBootstrapProcesses, ThreeRanksGatherBroadcastAndMeet) {
  const auto results = run_processes(3, {"ok", "30", "30"});
  for (int r = 0; r < 3; ++r) {
    const auto& res = results[static_cast<std::size_t>(r)];
    ASSERT_TRUE(res.succeeded()) << "rank " << r << ": " << describe(res);
    EXPECT_CONTAINS(res.output, "rank " + std::to_string(r) + " of 3 ok: local " + std::to_string(r) +
                                      " of 3, kind env");
    EXPECT_CONTAINS(res.output, "broadcast 'hello from rank 1'");
  }
}

TEST(EnvBootstrapProcesses, RankThatExitsIsNamedByTheOthers) {
  const auto results = run_processes(3, {"exit-early:2", "30", "30"});
  EXPECT_EQ(results[2].exit_code, 3) << describe(results[2]);
  for (int r = 0; r < 2; ++r) {
    const auto& res = results[static_cast<std::size_t>(r)];
    EXPECT_EQ(res.exit_code, 1) << describe(res);
    EXPECT_CONTAINS(res.output, "rank 2 (host ");
    EXPECT_CONTAINS(res.output, "closed the connection");
    // "closed the connection", not "timed out": it failed at once, not after the 30 s I/O timeout.
    EXPECT_EQ(res.output.find("timed out"), std::string::npos) << res.output;
  }
}

TEST(EnvBootstrapProcesses, HungRankTimesOutWithinTheIoTimeout) {
  const auto results = run_processes(3, {"hang:2", "2", "30"});
  for (int r = 0; r < 2; ++r) {
    const auto& res = results[static_cast<std::size_t>(r)];
    EXPECT_EQ(res.exit_code, 1) << describe(res);
    EXPECT_CONTAINS(res.output, "timed out after 2 s waiting for rank 2 (host ");
  }
}

TEST(EnvBootstrapProcesses, AbortAllEndsEveryRank) {
  const auto results = run_processes(3, {"abort:1", "30", "30"});
  EXPECT_EQ(results[1].exit_code, 5) << describe(results[1]);
  for (const int r : {0, 2}) {
    const auto& res = results[static_cast<std::size_t>(r)];
    EXPECT_EQ(res.exit_code, 1) << describe(res);
    EXPECT_CONTAINS(res.output, "rank 1 (host ");
    EXPECT_CONTAINS(res.output, "closed the connection");
  }
}

TEST(EnvBootstrapProcesses, BadVariableIsReported) {
  const auto results = run_processes(2, {"ok", "5", "5"}, [](int r, auto& env) {
    for (auto& [name, value] : env)
      if (r == 1 && name == "LOCAL_RANK") value = "one";
  });
  EXPECT_EQ(results[1].exit_code, 1) << describe(results[1]);
  EXPECT_CONTAINS(results[1].output, "LOCAL_RANK='one' is not a non-negative integer");
  // Rank 0 waits for it in vain and says so.
  EXPECT_EQ(results[0].exit_code, 1) << describe(results[0]);
  EXPECT_CONTAINS(results[0].output, "waiting for rank 1 to connect");
}

// ---------------------------------------------------------------------------
// The watchdog on the env bootstrap's connections: real processes, real signals

// Three ranks of env_bootstrap_check watch-slow:SLOW, with a 4 s watchdog
// (long enough that a live rank is not taken for frozen: that takes 2 s
// without a heartbeat, and a frozen one is silent for about 4 s at the end).
// When `stop`, the slow rank gets a real SIGSTOP once it is in the point (it
// then sends no heartbeat), and a SIGKILL once the other ranks have ended.
std::vector<ChildResult> run_watched(int slow, bool stop) {
  const int port = free_port();
  std::atomic<int> slow_pid{0};
  std::vector<std::future<ChildResult>> runs;
  for (int r = 0; r < 3; ++r) {
    ChildSpec spec;
    spec.argv = {ENV_BOOTSTRAP_CHECK_BIN, "watch-slow:" + std::to_string(slow), "30", "30", "4"};
    spec.extra_env = {{"RANK", std::to_string(r)},
                      {"WORLD_SIZE", "3"},
                      {"LOCAL_RANK", std::to_string(r)},
                      {"MASTER_ADDR", "127.0.0.1"},
                      {"MASTER_PORT", std::to_string(port)}};
    spec.timeout_seconds = 60;
    if (r == slow && stop) {
      auto said = std::make_shared<std::string>();
      spec.on_output = [said, &slow_pid](std::string_view chunk) {
        *said += chunk;
        const auto pid_at = said->find(" pid ");
        if (slow_pid != 0 || pid_at == std::string::npos || said->find("is in the point") == std::string::npos) return;
        slow_pid = std::atoi(said->c_str() + pid_at + 5);
        kill(slow_pid, SIGSTOP);
      };
    }
    runs.push_back(std::async(std::launch::async, [spec] { return run_child(spec); }));
  }
  std::vector<ChildResult> results(3);
  for (int r = 0; r < 3; ++r)
    if (r != slow) results[static_cast<std::size_t>(r)] = runs[static_cast<std::size_t>(r)].get();
  if (slow_pid != 0) kill(slow_pid, SIGKILL);
  results[static_cast<std::size_t>(slow)] = runs[static_cast<std::size_t>(slow)].get();
  return results;
}

// A rank stopped inside the point reached it, but its heartbeats stopped:
// rank 0 names it frozen, apart from the ranks waiting for it. The others end
// without a message of their own (rank 0's notice comes before its
// connection ends, and is acted on first). Every rank holds one connection
// to rank 0: the watchdog shares the bootstrap's.
TEST(EnvBootstrapWatchdog, NamesAFrozenRankOverTheBootstrapsOwnConnections) {
  const auto results = run_watched(2, true);
  const ChildResult& root = results[0];
  EXPECT_EQ(root.exit_code, 1) << describe(root);
  EXPECT_CONTAINS(root.output, "rank 0 pid ");
  EXPECT_CONTAINS(root.output, " sockets 2\n");
  EXPECT_CONTAINS(root.output,
                  "env_bootstrap_check: rank 0: TIMEOUT: the test point did not finish within 4 s. "
                  "Silent ranks (connected, but no heartbeat: stopped, starved of CPU, or cut off from the network): 2 (");
  EXPECT_CONTAINS(root.output, "Ranks that never reached it: none. Ranks waiting in it: 0 (");
  EXPECT_NOT_CONTAINS(root.output, "all are stuck inside it");
  EXPECT_EQ(results[1].exit_code, 1) << describe(results[1]);
  EXPECT_CONTAINS(results[1].output, " sockets 1\n");
  EXPECT_NOT_CONTAINS(results[1].output, "env_bootstrap_check: rank 1:");
  EXPECT_NOT_CONTAINS(results[1].output, "error:");
  EXPECT_CONTAINS(results[2].output, " sockets 1\n");
  EXPECT_EQ(results[2].term_signal, SIGKILL) << "still stopped when the others had ended: " << describe(results[2]);
}

// A rank that is slow but alive (asleep in the point) still beats: it is
// waiting in the point, not frozen, and so is every rank: stuck inside it.
TEST(EnvBootstrapWatchdog, ARankAliveInThePointIsNotFrozen) {
  const auto results = run_watched(2, false);
  const ChildResult& root = results[0];
  EXPECT_EQ(root.exit_code, 1) << describe(root);
  EXPECT_CONTAINS(root.output,
                  "TIMEOUT: the test point did not finish within 4 s. Ranks that never reached it: none "
                  "(all are stuck inside it). Ranks waiting in it: 0 (");
  EXPECT_NOT_CONTAINS(root.output, "Silent ranks");
  for (const int r : {1, 2}) {
    EXPECT_EQ(results[static_cast<std::size_t>(r)].exit_code, 1) << describe(results[static_cast<std::size_t>(r)]);
    EXPECT_NOT_CONTAINS(results[static_cast<std::size_t>(r)].output, "env_bootstrap_check: rank");
    EXPECT_NOT_CONTAINS(results[static_cast<std::size_t>(r)].output, "error:");
  }
}

// Rank 0 stopped: the others wait past the timeout (their grace, for rank 0
// to speak first), then name it frozen themselves.
TEST(EnvBootstrapWatchdog, TheOthersNameAFrozenRankZero) {
  const auto results = run_watched(0, true);
  for (const int r : {1, 2}) {
    const ChildResult& res = results[static_cast<std::size_t>(r)];
    EXPECT_EQ(res.exit_code, 1) << describe(res);
    EXPECT_CONTAINS(res.output, "TIMEOUT: the test point did not finish within 4 s. Rank 0 (");
    EXPECT_CONTAINS(res.output, ") is silent (connected, but no heartbeat: stopped, starved of CPU, or cut off from the network): "
                                  "silent for ");
  }
}

// ---------------------------------------------------------------------------
// The control links and the watchdog in this process: the test is the peer

// A connected pair of non-blocking stream sockets: [0] for the code under
// test, [1] for the test.
std::array<int, 2> socket_pair() {
  int fds[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0)
    throw std::runtime_error("socketpair failed");
  return {fds[0], fds[1]};
}

// One rank of a run of two in this process, whose only peer is the test: its
// control links are one end of a socket pair, and the test holds the other.
// Only the watchdog uses it, so it has no operations of its own.
class PairBootstrap final : public Bootstrap {
 public:
  PairBootstrap(int rank, int fd) : rank_(rank), links_(rank == 0 ? std::vector<int>{-1, fd} : std::vector<int>{fd}) {}
  std::string kind() const override { return "pair"; }
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  int local_rank() const override { return rank_; }
  int local_size() const override { return 2; }
  std::vector<char> all_gather(const void*, std::size_t) override { throw std::logic_error("not in these tests"); }
  void broadcast(void*, std::size_t, int) override { throw std::logic_error("not in these tests"); }
  void barrier() override { throw std::logic_error("not in these tests"); }
  [[noreturn]] void abort_all(int exit_code) override {
    links_.close_now();
    std::_Exit(exit_code);
  }
  RankLinks* control_links() override { return &links_; }

 private:
  int rank_;
  RankLinks links_;
};

constexpr std::uint32_t kBootstrapFrame = 7;  // any type below RankLinks::kWatchdogTypes

void send_type(int fd, std::uint32_t type, std::uint64_t seq = 0) {
  tcp::Header header;
  header.type = type;
  header.seq = seq;
  int err = 0;
  ASSERT_EQ(tcp::send_frame(fd, header, nullptr, tcp::after(10), err), tcp::Io::ok) << err;
}

// Returns once the links' I/O thread has read all that `peer` sent before
// its bootstrap frame: one peer's frames are read in order.
void wait_for_bootstrap_frame(RankLinks& links, int peer) {
  ASSERT_EQ(links.next({peer}, tcp::after(10)).status, RankLinks::Received::Status::frame);
}

void wait_for_end(RankLinks& links, int peer, RankLinks::Ending ending = RankLinks::Ending::closed) {
  const auto got = links.next({peer}, tcp::after(10));
  ASSERT_EQ(got.status, RankLinks::Received::Status::ended);
  EXPECT_EQ(got.ending, ending);
}

// What a watchdog listener heard: (peer, frame type, seq), type 0 for the end of a link.
using Heard = std::vector<std::tuple<int, std::uint32_t, std::uint64_t>>;
RankLinks::WatchdogListener recorder(Heard& heard) {
  return [&heard](int peer, const RankLinks::Frame* frame) {
    heard.emplace_back(peer, frame ? frame->header.type : 0, frame ? frame->header.seq : 0);
  };
}

// Every frame on the test's end `fd` until the other end is gone (or 10 s pass).
struct Received {
  std::vector<tcp::Header> frames;
  bool reset = false;  // the connection ended with a reset, not end-of-file
};

Received read_until_end(int fd) {
  Received got;
  tcp::FrameReader reader;
  const auto deadline = tcp::after(10);
  while (tcp::Clock::now() < deadline) {
    const auto step = reader.pump(fd);
    if (step == tcp::FrameReader::Step::header) {
      reader.payload.resize(reader.header.len);
    } else if (step == tcp::FrameReader::Step::done) {
      got.frames.push_back(reader.header);
      reader.reset();
    } else if (step == tcp::FrameReader::Step::again) {
      pollfd pfd{fd, POLLIN, 0};
      poll(&pfd, 1, tcp::poll_ms(deadline));
    } else {
      got.reset = reader.err != 0;
      return got;
    }
  }
  ADD_FAILURE() << "the connection did not end";
  return got;
}

// A peer whose watchdog started first reaches a point before this rank's
// watchdog listens: what it said is kept and replayed to the first listener,
// in order (dropped, rank 0 would name it as never having reached
// communicator init). From then on its frames go straight to the listener,
// and its end comes once, after them.
TEST(EnvBootstrapLinks, WatchdogFramesBeforeTheFirstListenerAreReplayedToIt) {
  const auto [mine, theirs] = socket_pair();
  RankLinks links({-1, mine});
  send_type(theirs, kWatchdogReached, 0);
  send_type(theirs, kWatchdogHeartbeat);
  send_type(theirs, kBootstrapFrame);
  wait_for_bootstrap_frame(links, 1);
  Heard heard;
  links.set_watchdog_listener(recorder(heard));
  EXPECT_EQ(heard, (Heard{{1, kWatchdogReached, 0}, {1, kWatchdogHeartbeat, 0}}));
  send_type(theirs, kWatchdogReached, 1);
  close(theirs);
  wait_for_end(links, 1);
  links.set_watchdog_listener(nullptr);  // returns once no call to `recorder` runs
  EXPECT_EQ(heard, (Heard{{1, kWatchdogReached, 0}, {1, kWatchdogHeartbeat, 0}, {1, kWatchdogReached, 1}, {1, 0, 0}}));
}

// A link that ended before the first listener: its frames, then its end, once.
TEST(EnvBootstrapLinks, AnEndBeforeTheFirstListenerComesOnceAfterItsFrames) {
  const auto [mine, theirs] = socket_pair();
  RankLinks links({mine});
  send_type(theirs, kWatchdogAbortNotice);
  close(theirs);
  wait_for_end(links, 0);
  Heard heard;
  links.set_watchdog_listener(recorder(heard));
  links.set_watchdog_listener(nullptr);
  EXPECT_EQ(heard, (Heard{{0, kWatchdogAbortNotice, 0}, {0, 0, 0}}));
}

// Kept: the latest kEarlyFrames of a peer (the latest say the most: the
// points it reached only grow). Once a listener has come and gone, frames
// are dropped, not kept for the next one.
TEST(EnvBootstrapLinks, EarlyFramesAreBoundedAndOnlyTheFirstListenerGetsThem) {
  const auto [mine, theirs] = socket_pair();
  RankLinks links({mine});
  const std::uint64_t sent = RankLinks::kEarlyFrames + 6;
  for (std::uint64_t i = 0; i < sent; ++i) send_type(theirs, kWatchdogReached, i);
  send_type(theirs, kBootstrapFrame);
  wait_for_bootstrap_frame(links, 0);
  Heard first;
  links.set_watchdog_listener(recorder(first));
  ASSERT_EQ(first.size(), RankLinks::kEarlyFrames);
  EXPECT_EQ(std::get<2>(first.front()), sent - RankLinks::kEarlyFrames);
  EXPECT_EQ(std::get<2>(first.back()), sent - 1);
  links.set_watchdog_listener(nullptr);
  send_type(theirs, kWatchdogHeartbeat);
  send_type(theirs, kBootstrapFrame);
  wait_for_bootstrap_frame(links, 0);
  Heard second;
  links.set_watchdog_listener(recorder(second));
  links.set_watchdog_listener(nullptr);
  EXPECT_TRUE(second.empty());
  close(theirs);
}

// A frame to a peer that stopped reading holds its link. A heartbeat then
// skips the link at once, and another frame waits for its turn no longer
// than its own deadline: neither holds up the watchdog's thread. Waiting for
// the link would last until the big frame gives up, so returning before its
// deadline (30 s away) is the proof, however loaded the machine.
TEST(EnvBootstrapLinks, ABusyLinkSkipsHeartbeatsAndBoundsTheWaitForIt) {
  const auto [mine, theirs] = socket_pair();
  RankLinks links({mine});
  const std::vector<char> big(std::size_t{64} << 20);  // far more than the socket holds
  tcp::Header frame;
  frame.type = kBootstrapFrame;
  frame.len = big.size();
  const auto big_deadline = tcp::after(30);
  std::thread sender([&] {
    int err = 0;
    links.send(0, frame, big.data(), big_deadline, err);
  });
  tcp::Header heartbeat;
  heartbeat.type = kWatchdogHeartbeat;
  int err = 0;
  bool busy = false;  // until the sender holds the link, heartbeats still go
  for (const auto until = tcp::after(10); !busy && tcp::Clock::now() < until;) {
    busy = !links.send_if_idle(0, heartbeat, nullptr, tcp::after(1), err);
    if (!busy) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(busy) << "a heartbeat waited for the link";
  if (busy) {
    EXPECT_EQ(links.send_if_idle(0, heartbeat, nullptr, big_deadline, err), std::nullopt) << "skipped, not timed out";
    EXPECT_LT(tcp::Clock::now(), big_deadline) << "the heartbeat waited for the link";
    const auto start = tcp::Clock::now();
    EXPECT_EQ(links.send(0, heartbeat, nullptr, tcp::after(0.3), err), tcp::Io::timed_out);
    EXPECT_GE(tcp::Clock::now() - start, std::chrono::milliseconds(250)) << "gave up before its deadline";
    EXPECT_LT(tcp::Clock::now(), big_deadline) << "the frame waited for the link past its own deadline";
  }
  close(theirs);  // the big frame fails at once: its peer is gone
  sender.join();
}

// close_now (an abort) after a last frame to a peer whose receive window is
// full, while frames from that peer lie unread here: the last frame still
// arrives whole, then end-of-file. A plain close with unread data sends a
// reset instead, which discards what is still queued for the peer.
TEST(EnvBootstrapLinks, CloseNowDeliversTheLastFrameDespiteUnreadData) {
  int err = 0;
  const int listener = tcp::listen_on(0, 1, err);
  ASSERT_GE(listener, 0) << err;
  const int small = 4096;  // the peer takes little at a time
  setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  std::string why;
  const int mine = tcp::connect_until("localhost", tcp::local_port(listener), tcp::after(10), why);
  ASSERT_GE(mine, 0) << why;
  const int large = 1 << 20;  // all that is sent waits here, none is refused
  setsockopt(mine, SOL_SOCKET, SO_SNDBUF, &large, sizeof large);
  pollfd pending{listener, POLLIN, 0};
  poll(&pending, 1, 10'000);
  const int theirs = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  close(listener);
  ASSERT_GE(theirs, 0);
  RankLinks links({mine});
  // A malformed frame ends the link for reading: what comes after it stays unread.
  tcp::Header malformed;
  malformed.magic = 0;
  const auto raw = tcp::encode(malformed);
  std::string bytes(reinterpret_cast<const char*>(raw.data()), raw.size());
  bytes += std::string(1000, 'x');
  ASSERT_EQ(send(theirs, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  wait_for_end(links, 0, RankLinks::Ending::malformed);
  // More than the peer's window: most of it, and the notice behind it, wait in this side's queue.
  const std::vector<char> payload(std::size_t{128} << 10, 'p');
  tcp::Header frame;
  frame.type = kBootstrapFrame;
  frame.len = payload.size();
  ASSERT_EQ(links.send(0, frame, payload.data(), tcp::after(10), err), tcp::Io::ok);
  tcp::Header notice;
  notice.type = kWatchdogAbortNotice;
  ASSERT_EQ(links.send(0, notice, nullptr, tcp::after(10), err), tcp::Io::ok);
  links.close_now();
  const Received got = read_until_end(theirs);
  close(theirs);
  EXPECT_FALSE(got.reset);
  ASSERT_EQ(got.frames.size(), 2u);
  EXPECT_EQ(got.frames[1].type, kWatchdogAbortNotice);
}

// After close_now nothing of the links' is closed again: its descriptor
// numbers may belong to files opened since.
TEST(EnvBootstrapLinks, CloseNowLeavesNothingForALaterCloseToCloseTwice) {
  const auto [mine, theirs] = socket_pair();
  int reused[2] = {-1, -1};
  {
    RankLinks links({mine});
    links.close_now();
    ASSERT_EQ(pipe2(reused, O_CLOEXEC), 0);
    ASSERT_EQ(reused[0], mine) << "the lowest free descriptor is the one close_now freed";
  }
  EXPECT_NE(fcntl(reused[0], F_GETFD), -1) << "closed by the links' destructor";
  close(reused[0]);
  close(reused[1]);
  close(theirs);
}

// A rank whose run ends by an exception of its own says no goodbye, so rank
// 0 takes its leaving for a death (and names it), not for a finish. A rank
// that finishes says goodbye last, also through finish() while an error that
// every rank meets alike (a usage error) unwinds.
TEST(WatchdogInProcess, NoGoodbyeFromARankThatFailsByAnExceptionOfItsOwn) {
  const auto goodbyes = [](const std::function<void(Watchdog&)>& body) {
    const auto [mine, theirs] = socket_pair();
    {
      PairBootstrap boot(1, mine);
      try {
        Watchdog watchdog(boot, "test", 60, {"h0", "h1"});
        body(watchdog);
      } catch (const std::runtime_error&) {
      }
    }  // the links close
    const Received got = read_until_end(theirs);
    close(theirs);
    // The goodbyes, and whether the last frame is one (heartbeats may come before).
    std::string said;
    for (const tcp::Header& frame : got.frames)
      if (frame.type == kWatchdogGoodbye) said += "goodbye ";
    if (!got.frames.empty() && got.frames.back().type != kWatchdogGoodbye) said += "then more";
    return said;
  };
  EXPECT_EQ(goodbyes([](Watchdog&) {}), "goodbye ");
  EXPECT_EQ(goodbyes([](Watchdog&) { throw std::runtime_error("this rank's own failure"); }), "");
  EXPECT_EQ(goodbyes([](Watchdog& watchdog) {
              watchdog.finish();
              throw std::runtime_error("every rank's usage error");
            }),
            "goodbye ");
}

// A point past its deadline when the rank stops (its main thread threw out
// of it) still ends the run with the watchdog's diagnosis: stopping does not
// override a failure. The stop comes 2 ms after the deadline, well within
// the watchdog's look every 62 ms, so it is the stop that finds it.
TEST(WatchdogInProcess, AFailureFoundAsTheRankStopsStillEndsTheRun) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto run = [] {
    const auto [mine, theirs] = socket_pair();
    PairBootstrap boot(0, mine);
    try {
      Watchdog watchdog(boot, "test", 1, {"h0", "h1"});
      watchdog.enter("the point");
      const double entered = steady_seconds();
      std::this_thread::sleep_for(std::chrono::duration<double>(entered + 1.002 - steady_seconds()));
      throw std::runtime_error("an error from the collective");
    } catch (const std::runtime_error&) {
    }
    std::_Exit(0);
  };
  EXPECT_EXIT(run(), ::testing::ExitedWithCode(1), "test: rank 0: TIMEOUT: the point did not finish within 1 s");
}

// --timeout 0.5 is said as 0.5 s, not 0 s; the rank that never came is named.
TEST(WatchdogInProcess, AFractionalTimeoutIsSaidAsGiven) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto run = [] {
    const auto [mine, theirs] = socket_pair();
    PairBootstrap boot(0, mine);
    Watchdog watchdog(boot, "test", 0.5, {"h0", "h1"});
    watchdog.enter("the point");
    std::this_thread::sleep_for(std::chrono::seconds(20));
    std::_Exit(0);
  };
  EXPECT_EXIT(run(), ::testing::ExitedWithCode(1),
              "TIMEOUT: the point did not finish within 0.5 s\\..* Ranks that never reached it: 1 \\(h1\\)");
}

// The abort operations of a scope run while it lives (here they end the
// process with 3, as a sign), and never once it is gone: what they abort
// may be destroyed by then.
TEST(WatchdogInProcess, ScopedAbortOperationsAreTakenBackWithTheScope) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto run = [](bool scope_alive) {
    const auto [mine, theirs] = socket_pair();
    PairBootstrap boot(0, mine);
    Watchdog watchdog(boot, "test", 0.5, {"h0", "h1"});
    std::optional<ScopedAbortOperations> scope;
    scope.emplace(watchdog, [] { std::_Exit(3); });
    if (!scope_alive) scope.reset();
    watchdog.enter("the point");
    std::this_thread::sleep_for(std::chrono::seconds(20));
    std::_Exit(0);
  };
  EXPECT_EXIT(run(true), ::testing::ExitedWithCode(3), "TIMEOUT");
  EXPECT_EXIT(run(false), ::testing::ExitedWithCode(1), "TIMEOUT");
}

// The main thread sends a big frame to a rank 0 that reads nothing (frozen),
// holding the link: the watchdog still ends the run at its deadline (1 s and
// the grace of 0.5 s), not once that send gives up after 20 s.
TEST(WatchdogInProcess, ABusyLinkDoesNotHoldUpTheDeadline) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto run = [] {
    const auto [mine, theirs] = socket_pair();
    PairBootstrap boot(1, mine);
    Watchdog watchdog(boot, "test", 1, {"h0", "h1"});
    watchdog.enter("the point");
    const std::vector<char> big(std::size_t{64} << 20);
    tcp::Header frame;
    frame.type = kBootstrapFrame;
    frame.len = big.size();
    int err = 0;
    boot.control_links()->send(0, frame, big.data(), tcp::after(20), err);
    std::_Exit(0);
  };
  // A watchdog held up by the send could end the run only once the send gave
  // up, 20 s after `start` at the earliest: ending before that is the proof,
  // however loaded the machine.
  const auto start = tcp::Clock::now();
  EXPECT_EXIT(run(), ::testing::ExitedWithCode(1), "TIMEOUT: the point did not finish within 1 s");
  EXPECT_LT(tcp::Clock::now() - start, std::chrono::seconds(20));
}

// Frozen: silent for 4 heartbeats, and never under 2 s, so that a live rank
// on a loaded machine is not taken for frozen when the timeout is short.
TEST(WatchdogTimes, AFrozenRankIsSilentForAtLeastTwoSeconds) {
  EXPECT_EQ(WatchdogTimes::for_timeout(2).heartbeat, 0.25);
  EXPECT_EQ(WatchdogTimes::for_timeout(2).frozen_after, 2);
  EXPECT_EQ(WatchdogTimes::for_timeout(5).frozen_after, 2.5);
  EXPECT_EQ(WatchdogTimes::for_timeout(600).heartbeat, 1);
  EXPECT_EQ(WatchdogTimes::for_timeout(600).frozen_after, 4);
}

}  // namespace
}  // namespace redline
