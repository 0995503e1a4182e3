// One rank of an env-bootstrap run, started by bootstrap_test with
// torchrun-style variables. Joins the rendezvous, then all_gather of
// (rank, host), broadcast from rank 1, barrier, each checked.
//   env_bootstrap_check MODE [IO_TIMEOUT_S] [CONNECT_TIMEOUT_S] [WATCHDOG_TIMEOUT_S]
// MODE: ok; exit-early:R (rank R exits once joined); hang:R (rank R sleeps
// 3 x IO_TIMEOUT_S instead of taking part); abort:R (rank R calls abort_all(5));
// watch-slow:R (a watchdog over the bootstrap's connections; every rank says
// "rank N pid P sockets S", enters a point and waits in a barrier, except
// rank R, which says "rank R is in the point" and sleeps there, for the test
// to stop it or not).
// Exit status 0 when every check passed, 1 with "rank R: error: ..." on
// stderr when an operation failed, 3 for the rank that exits early.
#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "collectives/bootstrap/env_bootstrap.hpp"
#include "collectives/bootstrap/rank_hosts.hpp"
#include "collectives/watchdog/watchdog.hpp"

namespace {

struct Entry {
  int rank;
  char host[256];
};

// This process's open sockets: its connections to the other ranks.
int open_sockets() {
  int sockets = 0;
  DIR* fds = opendir("/proc/self/fd");
  while (const dirent* entry = fds ? readdir(fds) : nullptr) {
    char target[64] = {};
    const std::string link = std::string("/proc/self/fd/") + entry->d_name;
    if (readlink(link.c_str(), target, sizeof target - 1) > 0 && std::strncmp(target, "socket:", 7) == 0) ++sockets;
  }
  if (fds) closedir(fds);
  return sockets;
}

// watch-slow:R. The watchdog of rank 0 ends the run (every rank exits 1).
int watch_slow_rank(redline::Bootstrap& boot, int slow_rank, double watchdog_timeout) {
  redline::Watchdog watchdog(boot, "env_bootstrap_check", watchdog_timeout, redline::gather_host_names(boot));
  std::printf("rank %d pid %d sockets %d\n", boot.rank(), static_cast<int>(getpid()), open_sockets());
  std::fflush(stdout);
  watchdog.enter("the test point");
  if (boot.rank() == slow_rank) {
    std::printf("rank %d is in the point\n", boot.rank());
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::duration<double>(10 * watchdog_timeout));
  }
  boot.barrier();
  watchdog.leave();
  return 0;
}

int run(const std::string& mode, double io_timeout, double connect_timeout, double watchdog_timeout) {
  const auto config = redline::env_rendezvous_from_environment();
  std::string action = mode;
  int target = -1;
  if (const auto colon = mode.find(':'); colon != std::string::npos) {
    action = mode.substr(0, colon);
    target = std::atoi(mode.c_str() + colon + 1);
  }
  auto boot = redline::make_env_bootstrap(config, connect_timeout, io_timeout);
  const int rank = boot->rank(), size = boot->size();
  if (rank == target) {
    if (action == "exit-early") std::_Exit(3);
    if (action == "hang") {
      std::this_thread::sleep_for(std::chrono::duration<double>(3 * io_timeout));
      return 0;
    }
    if (action == "abort") boot->abort_all(5);
  }
  if (action == "watch-slow") return watch_slow_rank(*boot, target, watchdog_timeout);

  Entry mine{};
  mine.rank = rank;
  gethostname(mine.host, sizeof mine.host - 1);
  const auto all = boot->all_gather(&mine, sizeof mine);
  if (all.size() != sizeof(Entry) * static_cast<std::size_t>(size)) throw std::runtime_error("all_gather size");
  std::string hosts;
  for (int r = 0; r < size; ++r) {
    Entry e;
    std::memcpy(&e, all.data() + sizeof(Entry) * static_cast<std::size_t>(r), sizeof e);
    if (e.rank != r)
      throw std::runtime_error("all_gather: slot " + std::to_string(r) + " holds rank " + std::to_string(e.rank));
    if (r) hosts += ',';
    hosts += e.host;
  }

  const int root = 1 % size;
  char message[32] = {};
  if (rank == root) std::snprintf(message, sizeof message, "hello from rank %d", root);
  boot->broadcast(message, sizeof message, root);
  const std::string expected = "hello from rank " + std::to_string(root);
  if (expected != message) throw std::runtime_error(std::string("broadcast gave '") + message + "'");

  boot->barrier();
  std::printf("rank %d of %d ok: local %d of %d, kind %s, all_gather [%s], broadcast '%s'\n", rank, size,
              boot->local_rank(), boot->local_size(), boot->kind().c_str(), hosts.c_str(), message);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "ok";
  const double io_timeout = argc > 2 ? std::atof(argv[2]) : 30;
  const double connect_timeout = argc > 3 ? std::atof(argv[3]) : 30;
  const double watchdog_timeout = argc > 4 ? std::atof(argv[4]) : 0;
  try {
    return run(mode, io_timeout, connect_timeout, watchdog_timeout);
  } catch (const std::exception& e) {
    const char* rank = std::getenv("RANK");
    std::fprintf(stderr, "rank %s: error: %s\n", rank ? rank : "?", e.what());
    return 1;
  }
}
