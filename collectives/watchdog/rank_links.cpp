#include "collectives/watchdog/rank_links.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>
#include <system_error>
#include <utility>

namespace redline {

RankLinks::RankLinks(std::vector<int> fds, std::size_t max_payload) : links_(fds.size()), max_payload_(max_payload) {
  for (std::size_t p = 0; p < fds.size(); ++p) {
    links_[p].fd = fds[p];
    if (fds[p] < 0) links_[p].ending = Ending::closed;  // rank 0's own slot
  }
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  reader_ = std::thread([this] { read_loop(); });
}

RankLinks::~RankLinks() { close(); }

void RankLinks::set_unreachable_after(double seconds) {
  const auto ms = static_cast<unsigned>(seconds * 1000);
  const int one = 1, idle = std::max(1, static_cast<int>(seconds / 2)), interval = 1,
            probes = std::max(1, static_cast<int>(seconds) - idle);
  for (Link& link : links_) {
    const int fd = link.fd;
    if (fd < 0) continue;
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  }
}

RankLinks::Ending RankLinks::ending_of(int peer, int& err) {
  std::lock_guard lock(mutex_);
  const Link& link = links_[static_cast<std::size_t>(peer)];
  err = link.err;
  return link.ending;
}

tcp::Io RankLinks::send(int peer, const tcp::Header& header, const void* payload, tcp::Clock::time_point deadline,
                        int& err) {
  Link& link = links_[static_cast<std::size_t>(peer)];
  std::unique_lock lock(link.send_mutex, deadline);
  if (!lock.owns_lock()) return tcp::Io::timed_out;
  const int fd = link.fd;
  if (fd < 0) {
    err = ENOTCONN;
    return tcp::Io::closed;
  }
  return tcp::send_frame(fd, header, payload, deadline, err);
}

std::optional<tcp::Io> RankLinks::send_if_idle(int peer, const tcp::Header& header, const void* payload,
                                               tcp::Clock::time_point deadline, int& err) {
  Link& link = links_[static_cast<std::size_t>(peer)];
  std::unique_lock lock(link.send_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return std::nullopt;
  const int fd = link.fd;
  if (fd < 0) {
    err = ENOTCONN;
    return tcp::Io::closed;
  }
  return tcp::send_frame(fd, header, payload, deadline, err);
}

RankLinks::Received RankLinks::next(const std::vector<int>& from, tcp::Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  for (;;) {
    Received got;
    for (const int peer : from) {
      Link& link = links_[static_cast<std::size_t>(peer)];
      if (link.inbox.empty()) continue;
      got.status = Received::Status::frame;
      got.peer = peer;
      got.frame = std::move(link.inbox.front());
      link.inbox.pop_front();
      return got;
    }
    for (const int peer : from) {
      const Link& link = links_[static_cast<std::size_t>(peer)];
      if (link.ending == Ending::open) continue;
      got.status = Received::Status::ended;
      got.peer = peer;
      got.ending = link.ending;
      got.err = link.err;
      return got;
    }
    if (arrived_.wait_until(lock, deadline) == std::cv_status::timeout) {
      got.status = Received::Status::timed_out;
      return got;
    }
  }
}

void RankLinks::set_watchdog_listener(WatchdogListener listener) {
  std::lock_guard listening(listener_mutex_);
  listener_ = std::move(listener);
  if (!listener_) return;
  const bool first = !had_listener_;
  had_listener_ = true;
  std::vector<int> ended;
  {
    std::lock_guard lock(mutex_);
    for (std::size_t p = 0; p < links_.size(); ++p)
      if (links_[p].fd >= 0 && links_[p].ending != Ending::open) ended.push_back(static_cast<int>(p));
  }
  // end_link takes listener_mutex_ before it marks a link ended, so each end
  // is told once: here, or there.
  if (first)
    for (std::size_t p = 0; p < links_.size(); ++p) {
      std::deque<Frame> early = std::move(links_[p].early);
      for (const Frame& frame : early) listener_(static_cast<int>(p), &frame);
    }
  for (const int peer : ended) listener_(peer, nullptr);
}

void RankLinks::close() {
  if (reader_.joinable()) {
    const char stop = 1;
    [[maybe_unused]] const auto n = ::write(wake_[1], &stop, 1);
    reader_.join();
  }
  for (Link& link : links_) {
    std::lock_guard lock(link.send_mutex);
    tcp::drain_and_close(link.fd.exchange(-1));
  }
  for (int& fd : wake_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

// No locks: another thread may hold one forever (a send to a frozen peer).
// shutdown, recv and close are async-signal-safe.
void RankLinks::close_now() noexcept {
  for (Link& link : links_) tcp::drain_and_close(link.fd.exchange(-1));
}

void RankLinks::read_loop() {
  for (;;) {
    std::vector<pollfd> fds{{wake_[0], POLLIN, 0}};
    std::vector<int> peers;
    {
      std::lock_guard lock(mutex_);
      for (std::size_t p = 0; p < links_.size(); ++p)
        if (links_[p].ending == Ending::open) {
          fds.push_back({links_[p].fd, POLLIN, 0});
          peers.push_back(static_cast<int>(p));
        }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;  // close(): stop reading
    for (std::size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents != 0) read_available(peers[i - 1]);
  }
}

// Everything `peer` has sent that can be read now, frame by frame.
void RankLinks::read_available(int peer) {
  Link& link = links_[static_cast<std::size_t>(peer)];
  for (;;) {
    const auto step = link.reader.pump(link.fd);
    if (step == tcp::FrameReader::Step::again) return;
    if (step == tcp::FrameReader::Step::closed) return end_link(peer, Ending::closed, link.reader.err);
    if (step == tcp::FrameReader::Step::failed) return end_link(peer, Ending::failed, link.reader.err);
    if (step == tcp::FrameReader::Step::header) {
      // Not one of ours, or more than any message of ours: the stream cannot be trusted.
      const auto& header = link.reader.header;
      if (header.magic != tcp::kMagic || header.len > max_payload_) return end_link(peer, Ending::malformed, 0);
      try {
        link.reader.payload.resize(header.len);
      } catch (const std::bad_alloc&) {
        return end_link(peer, Ending::malformed, 0);
      }
      continue;
    }
    Frame frame{link.reader.header, std::move(link.reader.payload)};
    link.reader.reset();
    deliver(peer, std::move(frame));
  }
}

void RankLinks::deliver(int peer, Frame frame) {
  if (frame.header.type >= kWatchdogTypes) return tell_watchdog(peer, &frame);
  {
    std::lock_guard lock(mutex_);
    links_[static_cast<std::size_t>(peer)].inbox.push_back(std::move(frame));
  }
  arrived_.notify_all();
}

void RankLinks::end_link(int peer, Ending ending, int err) {
  std::lock_guard listening(listener_mutex_);  // see set_watchdog_listener
  {
    std::lock_guard lock(mutex_);
    Link& link = links_[static_cast<std::size_t>(peer)];
    link.ending = ending;
    link.err = err;
  }
  arrived_.notify_all();
  if (listener_) listener_(peer, nullptr);
}

void RankLinks::tell_watchdog(int peer, const Frame* frame) {
  std::lock_guard listening(listener_mutex_);
  if (listener_) return listener_(peer, frame);
  if (had_listener_) return;  // stopped: dropped
  // No watchdog here yet: a peer's "reached communicator init" must not be lost.
  auto& early = links_[static_cast<std::size_t>(peer)].early;
  if (early.size() == kEarlyFrames) early.pop_front();  // the latest say the most (points only grow)
  early.push_back(*frame);
}

}  // namespace redline
