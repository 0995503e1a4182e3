#include "collectives/watchdog/watchdog.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <system_error>

#include "harness/core/clock.hpp"

namespace redline {
namespace {

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", seconds);
  return text;
}

}  // namespace

WatchdogTimes WatchdogTimes::for_timeout(double timeout_seconds) {
  WatchdogTimes times;
  times.timeout = timeout_seconds;
  times.grace = std::min(5.0, timeout_seconds / 2);
  times.abort_wait = std::min(10.0, timeout_seconds);
  times.heartbeat = std::min(1.0, timeout_seconds / 8);
  // A live rank beats every interval even under load; four missed in a row
  // is a process that does not run. Never under 2 s: a loaded machine can
  // leave a live process a second without CPU (with a timeout that short,
  // frozen ranks are not told apart).
  times.frozen_after = std::max(4 * times.heartbeat, 2.0);
  // Longer than silence, so a frozen rank (whose kernel still acknowledges)
  // is never called unreachable; within the timeout, so a cut link is named
  // as one before the point's deadline.
  times.unreachable_after = std::max(times.frozen_after + times.heartbeat, std::min(timeout_seconds / 2, 30.0));
  return times;
}

Watchdog::Watchdog(Bootstrap& bootstrap, std::string tool, double timeout_seconds, std::vector<std::string> hosts,
                   FaultHooks& faults)
    : bootstrap_(bootstrap),
      tool_(std::move(tool)),
      times_(WatchdogTimes::for_timeout(timeout_seconds)),
      hosts_(std::move(hosts)),
      faults_(faults),
      uncaught_at_start_(std::uncaught_exceptions()) {
  if (timeout_seconds <= 0 || bootstrap_.size() == 1) return;  // one rank cannot wait for another
  control_ = connect_control_links(bootstrap_);
  control_.links->set_unreachable_after(times_.unreachable_after);
  const auto peers = static_cast<std::size_t>(control_.links->peers());
  reached_.assign(static_cast<std::size_t>(bootstrap_.size()), 0);
  last_heard_.assign(peers, steady_seconds());
  finished_.assign(peers, false);
  control_.links->set_watchdog_listener([this](int peer, const RankLinks::Frame* frame) { on_frame(peer, frame); });
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() { stop(std::uncaught_exceptions() <= uncaught_at_start_); }

void Watchdog::finish() { stop(true); }

void Watchdog::stop(bool goodbye) {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();  // unless it ends the process: a failure it had seen comes first
  control_.links->set_watchdog_listener(nullptr);
  // A clean goodbye, so the peers tell a finished rank from a dead one.
  if (goodbye) send_to_peers(kWatchdogGoodbye, 0);
  if (control_.owned) control_.owned->close();
}

std::string Watchdog::rank_name(int rank) const {
  return std::to_string(rank) + " (" + (rank < static_cast<int>(hosts_.size()) ? hosts_[rank] : "?") + ")";
}

void Watchdog::enter(const std::string& label) {
  if (!thread_.joinable()) return;
  const std::uint64_t index = next_index_++;
  {
    std::lock_guard lock(mutex_);
    label_ = label;
    index_ = index;
    deadline_ = steady_seconds() + times_.timeout + (bootstrap_.rank() == 0 ? 0 : times_.grace);
    if (bootstrap_.rank() == 0) reached_[0] = index + 1;
  }
  if (bootstrap_.rank() != 0) {
    tcp::Header reached;
    reached.type = kWatchdogReached;
    reached.seq = index;
    int err = 0;  // a lost connection is reported by the listener
    control_.links->send(0, reached, nullptr, tcp::after(times_.timeout), err);
  }
}

void Watchdog::leave() {
  std::lock_guard lock(mutex_);
  deadline_ = 0;
  label_ = "between sizes";  // a later failure must not name a finished point
}

void Watchdog::set_abort_operations(std::function<void()> abort_operations) {
  std::lock_guard lock(mutex_);
  abort_operations_ = std::move(abort_operations);
}

void Watchdog::set_on_failure(std::function<void(const std::string&)> on_failure) {
  std::lock_guard lock(mutex_);
  on_failure_ = std::move(on_failure);
}

// On the links' I/O thread: every frame says its sender is alive.
void Watchdog::on_frame(int peer, const RankLinks::Frame* frame) {
  std::lock_guard lock(mutex_);
  const auto slot = static_cast<std::size_t>(peer);
  if (!frame) {
    if (!finished_[slot]) {
      if (lost_peer_ < 0) {
        lost_peer_ = peer;
        // A cut link times out every connection behind it within a heartbeat
        // or so: wait that long to name them together.
        int err = 0;
        lost_ready_at_ = steady_seconds() + (unreachable(peer, err) ? times_.heartbeat + 0.2 : 0);
      }
      lost_.push_back(peer);
    }
    wake_.notify_all();  // act now: the launcher may kill this rank soon
    return;
  }
  last_heard_[slot] = steady_seconds();
  switch (frame->header.type) {
    case kWatchdogReached: reached_[slot] = std::max(reached_[slot], frame->header.seq + 1); break;
    case kWatchdogGoodbye: finished_[slot] = true; break;
    case kWatchdogAbortNotice:
      abort_notice_ = true;
      wake_.notify_all();
      break;
    default: break;  // a heartbeat: its arrival is all it says
  }
}

// A heartbeat skips a link busy with another frame (a big bootstrap frame to
// a peer that stopped reading): waiting there would hold up this thread's
// deadline checks. Other messages wait for it, but no longer than a heartbeat.
void Watchdog::send_to_peers(std::uint32_t type, std::uint64_t seq) {
  tcp::Header header;
  header.type = type;
  header.seq = seq;
  const auto deadline = tcp::after(times_.heartbeat);
  for (int peer = 0; peer < control_.links->peers(); ++peer) {
    if (bootstrap_.rank() == 0 && peer == 0) continue;
    int err = 0;  // a lost connection is reported by the listener
    if (type == kWatchdogHeartbeat)
      control_.links->send_if_idle(peer, header, nullptr, deadline, err);
    else
      control_.links->send(peer, header, nullptr, deadline, err);
  }
}

void Watchdog::watch() {
  const auto tick = std::chrono::duration<double>(std::min(0.1, times_.heartbeat / 2));
  double next_heartbeat = 0;
  std::unique_lock lock(mutex_);
  const auto news = [this] {
    return stopping_ || abort_notice_ || (lost_peer_ >= 0 && steady_seconds() >= lost_ready_at_);
  };
  for (;;) {
    wake_.wait_for(lock, tick, news);
    // What went wrong before this rank stopped still ends the run: rank 0's
    // notice (no message of our own), a lost peer, a point past its deadline.
    if (abort_notice_) end_quietly();
    if (const auto failure = failure_now()) fail(*failure);
    if (stopping_) return;
    if (steady_seconds() >= next_heartbeat) {
      next_heartbeat = steady_seconds() + times_.heartbeat;
      lock.unlock();
      send_to_peers(kWatchdogHeartbeat, 0);
      lock.lock();
    }
  }
}

bool Watchdog::unreachable(int peer, int& err) {
  return control_.links->ending_of(peer, err) == RankLinks::Ending::failed &&
         (err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH);
}

// A closed or reset connection is a rank that ended; a timed-out one, a rank
// that cannot be reached. A link cut takes every rank behind it, so the other
// silent ranks are named beside the unreachable ones.
std::string Watchdog::lost_message() {
  const std::string during = label_.empty() ? "" : " during " + label_;
  int err = 0;
  if (!unreachable(lost_peer_, err)) {
    const int rank = bootstrap_.rank() == 0 ? lost_peer_ : 0;
    return "rank " + rank_name(rank) + " died or lost its connection" +
           (err != 0 ? " (" + std::string(std::strerror(err)) + ")" : "") + during + "; aborting the run";
  }
  std::string cut;
  std::vector<int> lost = lost_;  // in the order their connections ended: named in rank order
  std::sort(lost.begin(), lost.end());
  for (const int peer : lost)
    if (int e = 0; unreachable(peer, e)) cut += (cut.empty() ? "" : ", ") + rank_name(bootstrap_.rank() == 0 ? peer : 0);
  std::string silent;
  for (int peer = 1; bootstrap_.rank() == 0 && peer < static_cast<int>(last_heard_.size()); ++peer)
    if (std::find(lost_.begin(), lost_.end(), peer) == lost_.end() && !finished_[static_cast<std::size_t>(peer)])
      if (const std::string s = silent_for(peer); !s.empty())
        silent += (silent.empty() ? "" : ", ") + rank_name(peer) + " " + s;
  return std::string(lost_.size() > 1 ? "ranks " : "rank ") + cut + " unreachable" + during +
         ": the side channel's connection " +
         (err == ETIMEDOUT ? "timed out (nothing acknowledged for " + seconds_text(times_.unreachable_after) + ")"
                           : std::string(std::strerror(err))) +
         ", so a cut link, a node down, or a firewall" +
         (silent.empty() ? "" : ". Also silent (connected, no heartbeat): " + silent) + "; aborting the run";
}

std::optional<std::string> Watchdog::failure_now() {
  if (lost_peer_ >= 0) return steady_seconds() >= lost_ready_at_ ? std::optional(lost_message()) : std::nullopt;
  if (deadline_ == 0 || steady_seconds() < deadline_) return std::nullopt;
  return "TIMEOUT: " + timeout_message() + "; aborting";
}

std::string Watchdog::silent_for(int peer) const {
  const double silent = steady_seconds() - last_heard_[static_cast<std::size_t>(peer)];
  return silent >= times_.frozen_after ? "silent for " + seconds_text(silent) : "";
}

std::string Watchdog::timeout_message() const {
  std::string message = label_ + " did not finish within " + tcp::seconds_text(times_.timeout);
  if (bootstrap_.rank() != 0) {
    const std::string silent = silent_for(0);
    return message + (silent.empty() ? "" : ". Rank " + rank_name(0) + " is silent (connected, but no heartbeat: "
                                            "stopped, starved of CPU, or cut off from the network): " + silent);
  }
  std::string missing, waiting, frozen;
  for (std::size_t r = 0; r < reached_.size(); ++r) {
    const std::string name = rank_name(static_cast<int>(r));
    const std::string silent = r == 0 ? "" : silent_for(static_cast<int>(r));
    if (!silent.empty()) frozen += (frozen.empty() ? "" : ", ") + name + " " + silent;
    if (reached_[r] <= index_)
      missing += (missing.empty() ? "" : ", ") + name;
    else if (silent.empty())
      waiting += (waiting.empty() ? "" : ", ") + name;
  }
  if (!frozen.empty())
    message += ". Silent ranks (connected, but no heartbeat: stopped, starved of CPU, or cut off from the network): " +
               frozen;
  const std::string nobody = frozen.empty() ? "none (all are stuck inside it)" : "none";
  return message + ". Ranks that never reached it: " + (missing.empty() ? nobody : missing) +
         ". Ranks waiting in it: " + (waiting.empty() ? std::string("none") : waiting);
}

// With mutex_ held, so abort_operations_ cannot change underneath.
void Watchdog::fail(const std::string& message) {
  std::fprintf(stderr, "%s: rank %d: %s\n", tool_.c_str(), bootstrap_.rank(), message.c_str());
  std::fflush(stderr);
  if (on_failure_) on_failure_(message);
  // The others end without a message of their own: the cause is named here.
  if (bootstrap_.rank() == 0) send_to_peers(kWatchdogAbortNotice, 0);
  run_abort_operations();
  bootstrap_.abort_all(1);
  std::_Exit(1);  // abort_all does not return; this says so to the compiler
}

// Rank 0 has said why it aborts the run, and aborts the communicators; this
// rank ends without a word (its communicators go with the process).
void Watchdog::end_quietly() { std::_Exit(1); }

void Watchdog::run_abort_operations() {
  if (!abort_operations_) return;
  // ncclCommAbort can block: on a proxy thread, on peers that never abort,
  // or behind the main thread that holds the communicator. It gets a
  // bounded time on a thread of its own; then the run ends regardless.
  auto returned = std::make_shared<std::atomic<bool>>(false);
  try {
    std::thread([faults = &faults_, abort_operations = abort_operations_, returned] {
      faults->before_abort();
      abort_operations();
      *returned = true;
    }).detach();
  } catch (const std::system_error&) {
    *returned = true;  // no thread to be had: end the run without the abort
  }
  const double until = steady_seconds() + times_.abort_wait;
  while (!*returned && steady_seconds() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!*returned) {
    std::fprintf(stderr, "%s: rank %d: the communicator abort did not return within %s; exiting without it\n",
                 tool_.c_str(), bootstrap_.rank(), seconds_text(times_.abort_wait).c_str());
    std::fflush(stderr);
  }
}

}  // namespace redline
