// How the ranks of a run find each other: MPI (mpirun, srun), a TCP
// rendezvous from torchrun-style environment variables, or a single process.
// Only small control messages go through it (the ncclUniqueId, host names,
// per-rank times); never timed data.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redline {

class RankLinks;

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual std::string kind() const = 0;  // "mpi", "env", "single"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;  // rank among the processes on this host
  virtual int local_size() const = 0;

  // Every rank contributes `bytes` bytes; all receive size() x bytes in rank order.
  virtual std::vector<char> all_gather(const void* mine, std::size_t bytes) = 0;
  // `data` (bytes long on every rank) takes root's contents.
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // A barrier for a rank with nothing to do while others measure (a --split
  // auto round it sits out): it waits without spinning, so on nodes that
  // share CPUs the ranks at work keep them. Its wake-up may lag by a
  // few milliseconds, so never right before a clock starts.
  virtual void idle_barrier() { barrier(); }
  // Ends every rank of the run, from any thread (a hung collective).
  [[noreturn]] virtual void abort_all(int exit_code) = 0;
  // The MPI library underneath ("Open MPI v4.1.4"), for the report; empty without MPI.
  virtual std::string mpi_library() const { return ""; }
  // The TCP connections between rank 0 and every other rank that this
  // bootstrap already holds (the env bootstrap's), for the watchdog to share;
  // null where it holds none (MPI, a single process).
  virtual RankLinks* control_links() { return nullptr; }
};

// Which launcher started this process, from its environment.
struct LaunchInfo {
  std::string launcher;  // "mpirun (Open MPI)", "mpiexec (MPICH/PMI)", "srun", "torchrun-style env", "none"
  int world_size = 1;    // as the launcher says; 1 when there is none
  int rank = 0;
  int local_rank = 0;
};
LaunchInfo detect_launch();

// The value of launcher variable `name` (raw text, null when unset) as a
// non-negative int; malformed text throws std::runtime_error naming it.
std::optional<int> parse_launch_int(const char* name, const char* raw);

}  // namespace redline
