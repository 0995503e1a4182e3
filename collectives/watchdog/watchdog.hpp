// Watches every rank's progress so a hung, dead or frozen rank never leaves
// the others waiting forever, and says which ranks are to blame.
//
// Each rank tells rank 0, over the run's control links (control_links.hpp),
// when it reaches a point (communicator init, split, each series' warm-up
// pass, each measured size, the last before the timed loop, so nothing is
// added to the timed region), and every rank sends a heartbeat from its
// watchdog thread. Rank 0 aborts the run when a point has not finished within
// the timeout and names the ranks that never reached it, the ones waiting in
// it, and the silent ones, connected but whose heartbeats stopped (a stopped
// process, one that gets no CPU, or one cut off from the network before its
// connection times out): a rank stuck in a collective still beats, so a
// collective that hangs everywhere reads differently from one rank silent. A
// connection that fails is told by its cause: closed or reset (the rank
// died), or timed out and unreachable (a cut link, a node down). The other
// ranks abort a little later on their own if rank 0 is the one stuck, and any
// rank whose peer connection drops (a dead rank) aborts at once. Before it
// aborts, rank 0 hands the failure to on_failure (to save what was measured)
// and tells the other ranks, which then end without a message of their own.
// A rank that ends says goodbye first, so its peers tell a finish from a
// death; a rank whose run ends by an exception of its own does not.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collectives/bootstrap/bootstrap.hpp"
#include "collectives/watchdog/control_links.hpp"
#include "collectives/faults/fault_hooks.hpp"

namespace redline {

// The watchdog's waits, all from its timeout: a short test timeout means
// short waits, a production one (minutes) the full ones.
struct WatchdogTimes {
  double timeout = 0;
  double grace = 0;         // other ranks give rank 0 this long past the timeout to name the culprits first
  double abort_wait = 0;    // how long a failing rank waits for the communicator abort
  double heartbeat = 0;     // every rank's heartbeat interval
  double frozen_after = 0;  // silent this long: frozen
  // Sent data unacknowledged this long ends a connection (TCP_USER_TIMEOUT):
  // the peer is unreachable, not merely silent.
  double unreachable_after = 0;
  static WatchdogTimes for_timeout(double timeout_seconds);
};

// The watchdog's frames on the control links (RankLinks' watchdog lane).
enum WatchdogMessage : std::uint32_t {
  kWatchdogReached = RankLinks::kWatchdogTypes + 1,  // seq: the index of the point the sender reached
  kWatchdogHeartbeat,                                // the sender's watchdog thread runs
  kWatchdogGoodbye,                                  // the sender finished: its connection may close
  kWatchdogAbortNotice,                              // rank 0 aborts the run: end without a message of your own
};

class Watchdog {
 public:
  // timeout_seconds <= 0 disables it: no thread, no connections. `tool`
  // names the messages ("<tool>: rank 2: ..."); `hosts` holds each
  // rank's host name; `faults` is told when the communicators are aborted.
  Watchdog(Bootstrap& bootstrap, std::string tool, double timeout_seconds, std::vector<std::string> hosts,
           FaultHooks& faults = no_faults());
  // finish(), unless an exception thrown since the watchdog was made unwinds:
  // a failure of this rank alone, which its peers must see as one.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // This rank reached the next point (every rank passes the same points in
  // the same order); `label` names it in messages.
  void enter(const std::string& label);
  // This rank finished the point.
  void leave();
  // This rank is done, as every rank is (the run ended, or an error that every
  // rank meets alike, such as a usage error): stops watching and says goodbye,
  // so its peers take its leaving for a finish, not a death. Only once; a
  // failure seen first (an abort notice, a lost peer, a point past its
  // deadline) ends the run as it would have anyway.
  void finish();
  // What to abort (ncclCommAbort, MPI_Abort) before the process ends when the
  // run is aborted, replacing the one given before (none at first): a
  // communicator exists only once its init point is passed, and must be
  // unset before it is destroyed.
  void set_abort_operations(std::function<void()> abort_operations);
  // Called on the failing rank, with the message it printed, before the
  // communicators are aborted: where rank 0 saves what was measured.
  void set_on_failure(std::function<void(const std::string& message)> on_failure);

 private:
  void stop(bool goodbye);
  void watch();
  void on_frame(int peer, const RankLinks::Frame* frame);
  void send_to_peers(std::uint32_t type, std::uint64_t seq);
  std::optional<std::string> failure_now();  // with mutex_ held
  std::string timeout_message() const;       // with mutex_ held
  std::string silent_for(int rank) const;    // with mutex_ held: "" unless frozen
  std::string lost_message();                // with mutex_ held: the lost peers, by cause
  bool unreachable(int peer, int& err);      // its link ended by a timeout or an unreachable host
  [[noreturn]] void fail(const std::string& message);
  [[noreturn]] void end_quietly();
  void run_abort_operations();
  std::string rank_name(int rank) const;

  Bootstrap& bootstrap_;
  std::string tool_;
  WatchdogTimes times_;
  std::vector<std::string> hosts_;
  FaultHooks& faults_;
  ControlLinks control_;
  std::mutex mutex_;
  std::function<void()> abort_operations_;
  std::function<void(const std::string&)> on_failure_;
  std::vector<std::uint64_t> reached_;  // rank 0: the highest point each rank reached (+1; 0 = none)
  std::vector<double> last_heard_;      // per peer: when its last frame came (steady seconds)
  std::vector<bool> finished_;          // per peer: said goodbye
  int lost_peer_ = -1;                  // the first peer whose connection ended without a goodbye
  double lost_ready_at_ = 0;            // when to name it (steady seconds): later for a timeout, to name all behind a cut
  std::vector<int> lost_;               // every peer whose connection ended without a goodbye
  bool abort_notice_ = false;           // rank 0 said the run is being aborted
  std::string label_;
  double deadline_ = 0;  // 0: no point in progress
  std::uint64_t index_ = 0;
  std::uint64_t next_index_ = 0;  // the index enter() gives the next point
  bool stopping_ = false;
  std::condition_variable wake_;  // stopping, or news from the links
  std::thread thread_;
  int uncaught_at_start_ = 0;  // std::uncaught_exceptions() when made
};

// Gives the watchdog its abort operations for as long as it lives. Declared
// right after what they abort, it takes them back before that is destroyed,
// on every way out, an exception included: an abort never reaches a
// communicator that is gone.
class ScopedAbortOperations {
 public:
  ScopedAbortOperations(Watchdog& watchdog, std::function<void()> abort_operations) : watchdog_(watchdog) {
    watchdog_.set_abort_operations(std::move(abort_operations));
  }
  ~ScopedAbortOperations() { watchdog_.set_abort_operations({}); }
  ScopedAbortOperations(const ScopedAbortOperations&) = delete;
  ScopedAbortOperations& operator=(const ScopedAbortOperations&) = delete;

 private:
  Watchdog& watchdog_;
};

}  // namespace redline
