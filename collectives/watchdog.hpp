// Watches every rank's progress so a hung or dead rank never leaves the
// others waiting forever, and says which ranks never reached the operation.
//
// Each rank tells rank 0, over a small TCP side channel opened at start-up,
// when it reaches a point (communicator init, split, each series' warm-up pass, each measured size, the
// last before the timed loop, so nothing is added to the timed region). Rank 0 aborts the run when a point has not finished within
// the timeout and names the ranks that never reached it; the other ranks
// abort a little later on their own if rank 0 is the one stuck, and any rank
// whose peer connection drops (a dead rank) aborts at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectives/bootstrap.hpp"

namespace redline {

class Watchdog {
 public:
  // timeout_seconds <= 0 disables it: no thread, no sockets. `hosts` holds
  // each rank's host name (for messages). `abort_operations` is called before
  // the process ends, to abort communicators (ncclCommAbort, MPI_Abort).
  Watchdog(Bootstrap& bootstrap, double timeout_seconds, std::vector<std::string> hosts,
           std::function<void()> abort_operations);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // This rank reached the next point (every rank passes the same points in
  // the same order: communicator init, split, each series' warm-up pass, each
  // measured size); `label`
  // names it in messages.
  void enter(const std::string& label);
  // This rank finished the point.
  void leave();
  // What to abort when the run is aborted, replacing the one given before: a
  // communicator exists only once its init point is passed, and must be
  // unset before it is destroyed.
  void set_abort_operations(std::function<void()> abort_operations);

 private:
  void watch();
  [[noreturn]] void fail(const std::string& message);
  std::string rank_name(int rank) const;

  Bootstrap& bootstrap_;
  double timeout_;
  std::vector<std::string> hosts_;
  std::function<void()> abort_operations_;
  std::vector<int> peers_;  // rank 0: socket per rank (index = rank); others: [0] = rank 0
  std::vector<std::uint64_t> reached_;  // rank 0: the highest point each rank reached (+1; 0 = none)
  std::mutex mutex_;
  std::string label_;
  double deadline_ = 0;  // 0: no point in progress
  std::uint64_t index_ = 0;
  std::uint64_t next_index_ = 0;  // the index enter() gives the next point
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace redline
