// A run's control connections: rank 0 holds one TCP connection to every
// other rank, every other rank one to rank 0, and one I/O thread per process
// reads them all. Frames take one of two lanes by type: the bootstrap's
// requests and replies, waited for by the thread that made the call, and the
// watchdog's progress notes and heartbeats, handed to the watchdog as they
// arrive (also while the main thread is stuck in a collective). So the env
// bootstrap and the watchdog share one connection per rank.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collectives/bootstrap/tcp.hpp"

namespace redline {

class RankLinks {
 public:
  // Frame types from here on belong to the watchdog lane; lower ones to the bootstrap's.
  static constexpr std::uint32_t kWatchdogTypes = 0x100;

  struct Frame {
    tcp::Header header;
    std::vector<char> payload;
  };
  // Why a link ended.
  enum class Ending { open, closed, malformed, failed };
  // What a wait for a bootstrap frame found.
  struct Received {
    enum class Status { frame, ended, timed_out } status = Status::timed_out;
    int peer = -1;
    Frame frame;                   // status frame
    Ending ending = Ending::open;  // status ended
    int err = 0;                   // Ending::failed: the socket error
  };
  // Called on the I/O thread for every watchdog frame, and once with a null
  // frame when a link ends (after its last frame).
  using WatchdogListener = std::function<void(int peer, const Frame* frame)>;

  // `fds` by peer: on rank 0 one per rank (fds[0] = -1), elsewhere the one
  // to rank 0. Non-blocking sockets, owned from now on. A frame longer than
  // `max_payload` is malformed and ends its link.
  explicit RankLinks(std::vector<int> fds, std::size_t max_payload = std::size_t{1} << 34);
  ~RankLinks();
  RankLinks(const RankLinks&) = delete;
  RankLinks& operator=(const RankLinks&) = delete;

  int peers() const { return static_cast<int>(links_.size()); }

  // Gives every connection a bound on how long sent data may go unacknowledged,
  // and keepalive probes while it is idle (TCP_USER_TIMEOUT, SO_KEEPALIVE):
  // a peer cut off from the network then ends its link with ETIMEDOUT within
  // about `seconds`, where a stopped or starved process (whose kernel still
  // acknowledges) stays connected and only falls silent.
  void set_unreachable_after(double seconds);
  // Why `peer`'s link ended (open while it has not), and its socket error.
  Ending ending_of(int peer, int& err);

  // Sends one frame to `peer` whole: frames sent from several threads never
  // interleave. Waits until `deadline` for the link, both for its turn (a
  // frame another thread is sending) and for room (timed_out either way).
  tcp::Io send(int peer, const tcp::Header& header, const void* payload, tcp::Clock::time_point deadline, int& err);
  // As send, but only when no other frame to `peer` is under way: nullopt when
  // the link is busy. For the watchdog's heartbeats, which must not wait behind
  // a big frame to a peer that has stopped reading.
  std::optional<tcp::Io> send_if_idle(int peer, const tcp::Header& header, const void* payload,
                                      tcp::Clock::time_point deadline, int& err);

  // The next bootstrap frame from any of `from`, in order per peer, or the
  // first of them whose link ended (after its last frame), or timed_out.
  Received next(const std::vector<int>& from, tcp::Clock::time_point deadline);

  // Where watchdog frames go from now on; nullptr stops them (they are then
  // dropped). The frames that came before the first listener was set (a peer
  // whose watchdog started first) are kept, the latest kEarlyFrames per
  // peer, and replayed to it in order. A link that has already ended is
  // reported to a new listener at once, after its frames, and only once. When
  // this returns, no call to the previous listener is running.
  void set_watchdog_listener(WatchdogListener listener);
  static constexpr std::size_t kEarlyFrames = 64;

  // Stops the I/O thread and closes every connection, reading what is left
  // unread first (so the last frames sent reach the peers).
  void close();
  // From any thread, even a signal handler, before the process ends (an
  // abort): ends the connections so the peers see end-of-file at once, after
  // the frames already sent (no reset, which could discard them: see
  // tcp::drain_and_close). A later close() leaves them alone.
  void close_now() noexcept;

 private:
  struct Link {
    std::atomic<int> fd = -1;  // -1 once closed; atomic for close_now, from any thread
    tcp::FrameReader reader;
    std::deque<Frame> inbox;  // bootstrap lane
    std::deque<Frame> early;  // watchdog lane, before the first listener (under listener_mutex_)
    Ending ending = Ending::open;
    int err = 0;
    std::timed_mutex send_mutex;
  };

  void read_loop();
  void read_available(int peer);
  void deliver(int peer, Frame frame);
  void end_link(int peer, Ending ending, int err);
  void tell_watchdog(int peer, const Frame* frame);

  std::vector<Link> links_;
  std::size_t max_payload_;
  std::mutex mutex_;  // inboxes and endings
  std::condition_variable arrived_;
  std::mutex listener_mutex_;  // held while the listener runs, and over early frames and endings told
  WatchdogListener listener_;
  bool had_listener_ = false;  // a listener was set once: frames are no longer kept
  int wake_[2] = {-1, -1};  // a pipe that wakes the I/O thread to stop
  std::thread reader_;
};

}  // namespace redline
