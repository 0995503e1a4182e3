// The TCP rendezvous behind torchrun-style launches: rank 0 accepts one
// connection per rank and relays all_gather, broadcast and barrier. Every
// wait has a deadline and every failure names the rank it came from, so a
// dead or stuck rank ends the run with a message instead of a hang.
#include "collectives/env_bootstrap.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace redline {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kMagic = 0x52444c4e;  // "RDLN"
constexpr std::int64_t kProtocolVersion = 1;
constexpr std::size_t kMaxHostName = 1024;
constexpr std::size_t kMaxErrorText = 64 * 1024;

// ---------------------------------------------------------------------------
// Environment


int required_int(const char* name) {
  const auto value = parse_launch_int(name, std::getenv(name));
  if (!value)
    throw std::runtime_error(std::string(name) +
                             " is not set: the env bootstrap needs RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and "
                             "MASTER_PORT, as torchrun sets them");
  return *value;
}

void validate(const EnvRendezvousConfig& c) {
  const auto s = [](long long v) { return std::to_string(v); };
  if (c.world_size < 1) throw std::runtime_error("WORLD_SIZE='" + s(c.world_size) + "' must be at least 1");
  if (c.rank < 0 || c.rank >= c.world_size)
    throw std::runtime_error("RANK=" + s(c.rank) + " is out of range for WORLD_SIZE=" + s(c.world_size));
  if (c.local_rank < 0) throw std::runtime_error("LOCAL_RANK='" + s(c.local_rank) + "' must not be negative");
  if (c.local_world_size != -1) {
    if (c.local_world_size < 1)
      throw std::runtime_error("LOCAL_WORLD_SIZE='" + s(c.local_world_size) + "' must be at least 1");
    if (c.local_rank >= c.local_world_size)
      throw std::runtime_error("LOCAL_RANK=" + s(c.local_rank) + " is out of range for LOCAL_WORLD_SIZE=" +
                               s(c.local_world_size));
    if (c.local_world_size > c.world_size)
      throw std::runtime_error("LOCAL_WORLD_SIZE=" + s(c.local_world_size) + " is larger than WORLD_SIZE=" +
                               s(c.world_size));
  }
  if (c.world_size > 1) {
    if (c.master_addr.empty())
      throw std::runtime_error("MASTER_ADDR is empty: it must name rank 0's host (WORLD_SIZE=" + s(c.world_size) + ")");
    if (c.master_port < 1 || c.master_port > 65535)
      throw std::runtime_error("MASTER_PORT='" + s(c.master_port) + "' is not a port number (1-65535)");
  }
  if (c.host_name.size() > kMaxHostName) throw std::runtime_error("host name longer than 1024 bytes");
}

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

// ---------------------------------------------------------------------------
// Wire format: a fixed header (big-endian) and `len` payload bytes.

enum class Type : std::uint32_t { hello = 1, welcome, error, all_gather, broadcast, barrier };

const char* type_name(std::uint32_t t) {
  switch (static_cast<Type>(t)) {
    case Type::hello: return "hello";
    case Type::welcome: return "welcome";
    case Type::error: return "error";
    case Type::all_gather: return "all_gather";
    case Type::broadcast: return "broadcast";
    case Type::barrier: return "barrier";
  }
  return "unknown message";
}

struct Header {
  std::uint32_t magic = kMagic;
  std::uint32_t type = 0;
  std::uint64_t seq = 0;           // bootstrap call number
  std::int64_t v[4] = {0, 0, 0, 0};  // per type: hello {version, rank, world_size, local_rank}; ops {bytes, root}
  std::uint64_t len = 0;           // payload bytes
};
constexpr std::size_t kHeaderBytes = 4 + 4 + 8 + 4 * 8 + 8;
using RawHeader = std::array<unsigned char, kHeaderBytes>;

void put(unsigned char*& p, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) *p++ = static_cast<unsigned char>(v >> (8 * i));
}
std::uint64_t get(const unsigned char*& p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | *p++;
  return v;
}

RawHeader encode(const Header& h) {
  RawHeader raw{};
  unsigned char* p = raw.data();
  put(p, h.magic, 4);
  put(p, h.type, 4);
  put(p, h.seq, 8);
  for (const auto v : h.v) put(p, static_cast<std::uint64_t>(v), 8);
  put(p, h.len, 8);
  return raw;
}

Header decode(const RawHeader& raw) {
  Header h;
  const unsigned char* p = raw.data();
  h.magic = static_cast<std::uint32_t>(get(p, 4));
  h.type = static_cast<std::uint32_t>(get(p, 4));
  h.seq = get(p, 8);
  for (auto& v : h.v) v = static_cast<std::int64_t>(get(p, 8));
  h.len = get(p, 8);
  return h;
}

// ---------------------------------------------------------------------------
// Non-blocking socket I/O against deadlines.

int poll_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count() + 1;
  return static_cast<int>(std::clamp<long long>(left, 0, 60'000));
}

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

bool is_reset(int err) { return err == ECONNRESET || err == EPIPE || err == ENOTCONN || err == ECONNABORTED; }

void set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

enum class Io { ok, closed, timed_out, failed };

Io send_all(int fd, const void* data, std::size_t bytes, Clock::time_point deadline, int& err) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      bytes -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      err = errno;
      return is_reset(err) ? Io::closed : Io::failed;
    }
    pollfd pfd{fd, POLLOUT, 0};
    const int ready = ::poll(&pfd, 1, poll_ms(deadline));
    if (ready == 0 && Clock::now() >= deadline) return Io::timed_out;
  }
  return Io::ok;
}

// Reads one frame in pieces as data arrives, so rank 0 can wait on every
// rank at once and notice the first one that dies.
struct FrameReader {
  enum class Step { again, header, done, closed, failed };
  RawHeader raw{};
  std::size_t got = 0;
  bool have_header = false;
  Header header;
  std::vector<char> payload;  // sized by the caller after it accepts the header
  std::size_t payload_got = 0;
  int err = 0;

  void reset() { *this = FrameReader(); }

  Step pump(int fd) {
    for (;;) {
      if (have_header && payload_got == payload.size()) return Step::done;
      char* dst = have_header ? payload.data() + payload_got : reinterpret_cast<char*>(raw.data()) + got;
      const std::size_t want = have_header ? payload.size() - payload_got : kHeaderBytes - got;
      const ssize_t n = ::recv(fd, dst, want, 0);
      if (n == 0) return Step::closed;
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Step::again;
        err = errno;
        return is_reset(err) ? Step::closed : Step::failed;
      }
      if (have_header) {
        payload_got += static_cast<std::size_t>(n);
      } else if ((got += static_cast<std::size_t>(n)) == kHeaderBytes) {
        have_header = true;
        header = decode(raw);
        return Step::header;
      }
    }
  }
};

// Reads what is left unread and closes: closing with unread data would send
// a reset, which can discard the error message just sent to that peer.
void drain_and_close(int fd) {
  if (fd < 0) return;
  ::shutdown(fd, SHUT_WR);
  char buf[4096];
  for (int i = 0; i < 256 && ::recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0; ++i) {
  }
  ::close(fd);
}

// ---------------------------------------------------------------------------

class EnvBootstrap final : public Bootstrap {
 public:
  EnvBootstrap(const EnvRendezvousConfig& config, double connect_timeout_s, double io_timeout_s)
      : config_(config), connect_timeout_(connect_timeout_s), io_timeout_(io_timeout_s),
        grace_(std::min(5.0, io_timeout_s)) {
    validate(config_);
    if (config_.host_name.empty()) config_.host_name = this_host();
    hosts_.assign(static_cast<std::size_t>(config_.world_size), "");
    local_ranks_.assign(static_cast<std::size_t>(config_.world_size), 0);
    hosts_[static_cast<std::size_t>(config_.rank)] = config_.host_name;
    local_ranks_[static_cast<std::size_t>(config_.rank)] = config_.local_rank;
    if (config_.world_size > 1) {
      if (config_.rank == 0)
        serve_rendezvous();
      else
        join_rendezvous();
    }
    if (config_.local_world_size != -1) {
      local_size_ = config_.local_world_size;
    } else {
      local_size_ = static_cast<int>(std::count(hosts_.begin(), hosts_.end(), config_.host_name));
    }
  }

  ~EnvBootstrap() override { close_all(); }
  EnvBootstrap(const EnvBootstrap&) = delete;
  EnvBootstrap& operator=(const EnvBootstrap&) = delete;

  std::string kind() const override { return "env"; }
  int rank() const override { return config_.rank; }
  int size() const override { return config_.world_size; }
  int local_rank() const override { return config_.local_rank; }
  int local_size() const override { return local_size_; }

  std::vector<char> all_gather(const void* mine, std::size_t bytes) override {
    std::vector<char> all(bytes * static_cast<std::size_t>(size()));
    if (bytes) std::memcpy(all.data() + bytes * static_cast<std::size_t>(rank()), mine, bytes);
    if (size() == 1) return all;
    if (rank() == 0) {
      auto frames = gather_requests(Type::all_gather, bytes, 0);
      for (int r = 1; r < size(); ++r)
        if (bytes) std::memcpy(all.data() + bytes * static_cast<std::size_t>(r), frames[r].data(), bytes);
      reply_all(Type::all_gather,
                [&](int) { return std::make_pair(static_cast<const void*>(all.data()), all.size()); });
    } else {
      request(Type::all_gather, bytes, 0, mine, bytes, all.data(), all.size());
    }
    ++seq_;
    return all;
  }

  void broadcast(void* data, std::size_t bytes, int root) override {
    if (root < 0 || root >= size())
      throw std::runtime_error("broadcast root " + std::to_string(root) + " is out of range for world size " +
                               std::to_string(size()));
    if (size() == 1) return;
    if (rank() == 0) {
      auto frames = gather_requests(Type::broadcast, bytes, root);
      if (root != 0 && bytes) std::memcpy(data, frames[root].data(), bytes);
      reply_all(Type::broadcast, [&](int r) {
        return std::make_pair(static_cast<const void*>(data), r == root ? std::size_t{0} : bytes);
      });
    } else {
      const bool mine = rank() == root;
      request(Type::broadcast, bytes, root, data, mine ? bytes : 0, data, mine ? 0 : bytes);
    }
    ++seq_;
  }

  void barrier() override {
    if (size() == 1) return;
    if (rank() == 0) {
      gather_requests(Type::barrier, 0, 0);
      reply_all(Type::barrier, [](int) { return std::make_pair(static_cast<const void*>(nullptr), std::size_t{0}); });
    } else {
      request(Type::barrier, 0, 0, nullptr, 0, nullptr, 0);
    }
    ++seq_;
  }

  [[noreturn]] void abort_all(int exit_code) override {
    // Peers blocked on us see end-of-file at once and fail their operation.
    for (const int fd : fds_)
      if (fd >= 0) ::close(fd);
    if (listener_ >= 0) ::close(listener_);
    std::_Exit(exit_code);
  }

 private:
  // ---- names for messages ----
  std::string who(int r) const {
    const auto& host = hosts_[static_cast<std::size_t>(r)];
    return "rank " + std::to_string(r) + " (host " + (host.empty() ? std::string("unknown") : host) + ")";
  }
  std::string during(Type t) const {
    if (t == Type::hello || t == Type::welcome) return " during the rendezvous";
    return std::string(" during ") + type_name(static_cast<std::uint32_t>(t)) + " (bootstrap call #" +
           std::to_string(seq_) + ")";
  }
  std::string endpoint() const {
    return "MASTER_ADDR=" + config_.master_addr + " MASTER_PORT=" + std::to_string(config_.master_port);
  }

  void check_usable() const {
    if (!broken_.empty()) throw std::runtime_error("env bootstrap is unusable after an earlier error: " + broken_);
  }

  // Ends this rank's use of the bootstrap. Rank 0 first tells every rank
  // still connected why, so they all report the same cause.
  [[noreturn]] void fail(const std::string& message) {
    broken_ = message;
    if (rank() == 0) {
      const auto deadline = after(std::min(2.0, io_timeout_));
      Header h;
      h.type = static_cast<std::uint32_t>(Type::error);
      h.seq = seq_;
      const std::string text = message.substr(0, kMaxErrorText);
      h.len = text.size();
      const auto raw = encode(h);
      std::vector<int> told = fds_;
      for (const auto& p : pending_) told.push_back(p.fd);  // connected, hello still on its way
      for (const int fd : told) {
        if (fd < 0) continue;
        int err = 0;
        if (send_all(fd, raw.data(), raw.size(), deadline, err) == Io::ok)
          send_all(fd, text.data(), text.size(), deadline, err);
      }
    }
    close_all();
    throw std::runtime_error(message);
  }

  void close_all() {
    for (int& fd : fds_) {
      drain_and_close(fd);
      fd = -1;
    }
    for (const auto& p : pending_) drain_and_close(p.fd);
    pending_.clear();
    if (listener_ >= 0) ::close(listener_);
    listener_ = -1;
  }

  void send_or_fail(int peer, const void* data, std::size_t bytes, Clock::time_point deadline, Type t) {
    int err = 0;
    switch (send_all(fds_[static_cast<std::size_t>(peer)], data, bytes, deadline, err)) {
      case Io::ok: return;
      case Io::closed:
        if (rank() != 0) fail_with_pending_error(who(peer) + " closed the connection" + during(t));
        fail(who(peer) + " closed the connection" + during(t));
      case Io::timed_out:
        fail("timed out after " + seconds_text(io_timeout_) + " sending to " + who(peer) + during(t));
      case Io::failed:
        fail("sending to " + who(peer) + " failed" + during(t) + ": " + std::strerror(err));
    }
  }

  // When rank 0 hung up on us it usually said why first: prefer its words.
  [[noreturn]] void fail_with_pending_error(const std::string& fallback) {
    FrameReader reader;
    const auto deadline = after(0.5);
    const int fd = fds_[0];
    while (fd >= 0) {
      const auto step = reader.pump(fd);
      if (step == FrameReader::Step::header) {
        if (reader.header.magic != kMagic || reader.header.type != static_cast<std::uint32_t>(Type::error) ||
            reader.header.len > kMaxErrorText)
          break;
        reader.payload.resize(reader.header.len);
        continue;
      }
      if (step == FrameReader::Step::done) fail(std::string(reader.payload.begin(), reader.payload.end()));
      if (step != FrameReader::Step::again) break;
      pollfd pfd{fd, POLLIN, 0};
      if (::poll(&pfd, 1, poll_ms(deadline)) == 0 && Clock::now() >= deadline) break;
    }
    fail(fallback);
  }

  // ---- rendezvous, rank 0 ----
  void serve_rendezvous() {
    fds_.assign(static_cast<std::size_t>(size()), -1);
    open_listener();
    const auto deadline = after(connect_timeout_);
    auto& pending = pending_;
    int joined = 1;
    while (joined < size()) {
      std::vector<pollfd> pfds{{listener_, POLLIN, 0}};
      for (const auto& p : pending) pfds.push_back({p.fd, POLLIN, 0});
      const int ready = ::poll(pfds.data(), pfds.size(), poll_ms(deadline));
      if (ready < 0 && errno != EINTR) fail(std::string("poll failed during the rendezvous: ") + std::strerror(errno));
      if (ready <= 0) {
        if (Clock::now() < deadline) continue;
        std::string missing;
        int count = 0;
        for (int r = 1; r < size(); ++r) {
          if (fds_[static_cast<std::size_t>(r)] >= 0) continue;
          if (count++ >= 16) continue;
          if (!missing.empty()) missing += ", ";
          missing += std::to_string(r);
        }
        if (count > 16) missing += ", ... (" + std::to_string(count) + " in all)";
        fail("rank 0 (host " + config_.host_name + ") timed out after " + seconds_text(connect_timeout_) +
             " waiting for rank" + (count > 1 ? "s " : " ") + missing + " to connect to port " +
             std::to_string(config_.master_port) + " (" + endpoint() +
             "): are they running, with the same MASTER_ADDR and MASTER_PORT?");
      }
      if (pfds[0].revents & POLLIN) {
        const int fd = ::accept(listener_, nullptr, nullptr);
        if (fd >= 0) {
          set_nonblocking(fd);
          pending.push_back({fd, FrameReader()});
        }
      }
      for (std::size_t i = 0; i < pending.size();) {
        auto& p = pending[i];
        auto step = p.reader.pump(p.fd);
        if (step == FrameReader::Step::header) {
          const auto& h = p.reader.header;
          if (h.magic != kMagic || h.type != static_cast<std::uint32_t>(Type::hello) || h.len > kMaxHostName) {
            step = FrameReader::Step::failed;  // not one of ours (a port scan, a health check): ignore it
          } else {
            p.reader.payload.resize(h.len);
            step = p.reader.pump(p.fd);
          }
        }
        if (step == FrameReader::Step::again) {
          ++i;
          continue;
        }
        if (step != FrameReader::Step::done) {  // left before saying hello, or a stranger
          ::close(p.fd);
          pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
          continue;
        }
        const int fd = p.fd;
        const Header h = p.reader.header;
        const std::string host(p.reader.payload.begin(), p.reader.payload.end());
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
        admit(fd, h, host);
        ++joined;
      }
    }
    for (const auto& p : pending) ::close(p.fd);  // more than WORLD_SIZE ranks came: they see end-of-file
    pending.clear();
    ::close(listener_);  // frees the port for the next run at once
    listener_ = -1;

    // Two ranks on one host with the same LOCAL_RANK would pick the same GPU.
    for (int a = 0; a < size(); ++a)
      for (int b = a + 1; b < size(); ++b)
        if (hosts_[static_cast<std::size_t>(a)] == hosts_[static_cast<std::size_t>(b)] &&
            local_ranks_[static_cast<std::size_t>(a)] == local_ranks_[static_cast<std::size_t>(b)])
          fail("rank " + std::to_string(a) + " and rank " + std::to_string(b) + " both run on host " +
               hosts_[static_cast<std::size_t>(a)] + " with LOCAL_RANK=" +
               std::to_string(local_ranks_[static_cast<std::size_t>(a)]));

    std::string table;
    for (int r = 0; r < size(); ++r) {
      const auto& host = hosts_[static_cast<std::size_t>(r)];
      Header entry;  // reuse the header encoding for (local rank, host length)
      entry.v[0] = local_ranks_[static_cast<std::size_t>(r)];
      entry.len = host.size();
      const auto raw = encode(entry);
      table.append(reinterpret_cast<const char*>(raw.data()), raw.size());
      table += host;
    }
    Header welcome;
    welcome.type = static_cast<std::uint32_t>(Type::welcome);
    welcome.v[0] = size();
    welcome.len = table.size();
    const auto raw = encode(welcome);
    const auto send_deadline = after(io_timeout_);
    for (int r = 1; r < size(); ++r) {
      send_or_fail(r, raw.data(), raw.size(), send_deadline, Type::welcome);
      send_or_fail(r, table.data(), table.size(), send_deadline, Type::welcome);
    }
  }

  void open_listener() {
    // Every interface: IPv6 with IPv4-mapped addresses where the host has
    // IPv6, plain IPv4 where it has not.
    int err = 0;
    for (const int family : {AF_INET6, AF_INET}) {
      const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        err = errno;
        continue;
      }
      const int one = 1, zero = 0;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      sockaddr_storage storage{};
      socklen_t len;
      const auto port = htons(static_cast<std::uint16_t>(config_.master_port));
      if (family == AF_INET6) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        auto* addr = reinterpret_cast<sockaddr_in6*>(&storage);
        addr->sin6_family = AF_INET6;
        addr->sin6_addr = in6addr_any;
        addr->sin6_port = port;
        len = sizeof *addr;
      } else {
        auto* addr = reinterpret_cast<sockaddr_in*>(&storage);
        addr->sin_family = AF_INET;
        addr->sin_addr.s_addr = htonl(INADDR_ANY);
        addr->sin_port = port;
        len = sizeof *addr;
      }
      if (::bind(fd, reinterpret_cast<sockaddr*>(&storage), len) == 0 &&
          ::listen(fd, std::min(size(), SOMAXCONN)) == 0) {
        set_nonblocking(fd);
        listener_ = fd;
        return;
      }
      err = errno;
      ::close(fd);
      if (err == EADDRINUSE) break;  // IPv4 would find it taken too
    }
    fail("rank 0 (host " + config_.host_name + ") cannot listen on port " + std::to_string(config_.master_port) +
         " (" + endpoint() + "): " + std::strerror(err) +
         (err == EADDRINUSE ? " (another program, or another rank 0, holds the port)" : ""));
  }

  void admit(int fd, const Header& h, const std::string& host) {
    const auto version = h.v[0], r = h.v[1], world = h.v[2], local = h.v[3];
    const std::string them = "rank " + std::to_string(r) + " (host " + host + ")";
    auto reject = [&](const std::string& why) {
      // The rejected rank hears why too.
      fds_.push_back(fd);
      fail(why);
    };
    if (version != kProtocolVersion)
      reject(them + " speaks bootstrap protocol " + std::to_string(version) + ", rank 0 speaks " +
             std::to_string(kProtocolVersion) + ": mixed redline versions");
    if (world != size())
      reject(them + " has WORLD_SIZE=" + std::to_string(world) + " but rank 0 (host " + config_.host_name +
             ") has WORLD_SIZE=" + std::to_string(size()));
    if (r < 1 || r >= size())
      reject("a rank on host " + host + " has RANK=" + std::to_string(r) + ", out of range for WORLD_SIZE=" +
             std::to_string(size()));
    const auto slot = static_cast<std::size_t>(r);
    if (fds_[slot] >= 0)
      reject("RANK=" + std::to_string(r) + " joined twice: from host " + hosts_[slot] + " and from host " + host);
    fds_[slot] = fd;
    hosts_[slot] = host;
    local_ranks_[slot] = static_cast<int>(local);
  }

  // ---- rendezvous, other ranks ----
  void join_rendezvous() {
    fds_.assign(1, -1);
    hosts_[0] = config_.master_addr;  // until rank 0 tells us its host name
    const auto deadline = after(connect_timeout_);
    std::string last_error = "no attempt";
    auto backoff = std::chrono::milliseconds(50);
    const std::string port = std::to_string(config_.master_port);
    while (fds_[0] < 0) {
      addrinfo hints{};
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* found = nullptr;
      // Name lookups are retried too: a pod's DNS entry may appear late.
      const int gai = ::getaddrinfo(config_.master_addr.c_str(), port.c_str(), &hints, &found);
      if (gai != 0) last_error = std::string("cannot resolve MASTER_ADDR: ") + gai_strerror(gai);
      for (addrinfo* a = found; a && fds_[0] < 0; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
          last_error = std::strerror(errno);
          continue;
        }
        set_nonblocking(fd);
        int err = 0;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
          err = errno;
          if (err == EINPROGRESS) {
            pollfd pfd{fd, POLLOUT, 0};
            const int ready = ::poll(&pfd, 1, std::min(poll_ms(deadline), 5000));
            socklen_t len = sizeof err;
            err = ready > 0 ? 0 : ETIMEDOUT;
            if (ready > 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
          }
        }
        if (err == 0) {
          fds_[0] = fd;
        } else {
          last_error = std::strerror(err);
          ::close(fd);
        }
      }
      if (found) ::freeaddrinfo(found);
      if (fds_[0] >= 0) break;
      if (Clock::now() >= deadline)
        fail(who(rank()) + " could not connect to rank 0 at " + endpoint() + " within " +
             seconds_text(connect_timeout_) + ": " + last_error);
      std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - Clock::now()));
      backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
    }

    Header hello;
    hello.type = static_cast<std::uint32_t>(Type::hello);
    hello.v[0] = kProtocolVersion;
    hello.v[1] = rank();
    hello.v[2] = size();
    hello.v[3] = config_.local_rank;
    hello.len = config_.host_name.size();
    const auto raw = encode(hello);
    const auto send_deadline = after(io_timeout_);
    send_or_fail(0, raw.data(), raw.size(), send_deadline, Type::hello);
    send_or_fail(0, config_.host_name.data(), config_.host_name.size(), send_deadline, Type::hello);

    // Rank 0 answers when the last rank has joined, within its own connect
    // timeout, which started before we connected.
    const auto frame = receive_from_root(Type::welcome, after(connect_timeout_ + grace_), connect_timeout_ + grace_,
                                         kAnySeq, static_cast<std::size_t>(size()) * (kHeaderBytes + kMaxHostName));
    if (frame.header.v[0] != size())
      fail("rank 0 has WORLD_SIZE=" + std::to_string(frame.header.v[0]) + " but " + who(rank()) +
           " has WORLD_SIZE=" + std::to_string(size()));
    const unsigned char* p = reinterpret_cast<const unsigned char*>(frame.payload.data());
    const unsigned char* end = p + frame.payload.size();
    for (int r = 0; r < size(); ++r) {
      RawHeader entry_raw{};
      if (end - p < static_cast<std::ptrdiff_t>(kHeaderBytes)) fail("rank 0 sent a malformed rank table");
      std::memcpy(entry_raw.data(), p, kHeaderBytes);
      p += kHeaderBytes;
      const Header entry = decode(entry_raw);
      if (entry.len > kMaxHostName || static_cast<std::uint64_t>(end - p) < entry.len)
        fail("rank 0 sent a malformed rank table");
      local_ranks_[static_cast<std::size_t>(r)] = static_cast<int>(entry.v[0]);
      hosts_[static_cast<std::size_t>(r)].assign(reinterpret_cast<const char*>(p), entry.len);
      p += entry.len;
    }
  }

  // Waits for rank 0's answer of type `t`; an error frame becomes our error.
  // `seq` kAnySeq means "any" (the welcome); more than `max_len` bytes is malformed.
  static constexpr std::uint64_t kAnySeq = std::numeric_limits<std::uint64_t>::max();
  FrameReader receive_from_root(Type t, Clock::time_point deadline, double waited_s, std::uint64_t seq,
                                std::size_t max_len) {
    FrameReader reader;
    const int fd = fds_[0];
    for (;;) {
      auto step = reader.pump(fd);
      if (step == FrameReader::Step::header) {
        const auto& h = reader.header;
        const bool is_error = h.type == static_cast<std::uint32_t>(Type::error);
        if (h.magic != kMagic) fail("rank 0 sent a malformed message" + during(t));
        if (is_error) {
          if (h.len > kMaxErrorText) fail("rank 0 sent a malformed error message" + during(t));
        } else if (h.type != static_cast<std::uint32_t>(t) || (seq != kAnySeq && h.seq != seq)) {
          fail("rank 0 answered " + std::string(type_name(h.type)) + " (bootstrap call #" + std::to_string(h.seq) +
               ") to " + type_name(static_cast<std::uint32_t>(t)) + " (bootstrap call #" + std::to_string(seq_) + ")");
        } else if (h.len > max_len) {
          fail("rank 0 answered " + std::to_string(h.len) + " bytes where at most " + std::to_string(max_len) +
               " were expected" + during(t));
        }
        reader.payload.resize(h.len);
        continue;
      }
      if (step == FrameReader::Step::done) {
        if (reader.header.type == static_cast<std::uint32_t>(Type::error))
          fail(std::string(reader.payload.begin(), reader.payload.end()));
        return reader;
      }
      if (step == FrameReader::Step::closed) fail(who(0) + " closed the connection" + during(t));
      if (step == FrameReader::Step::failed)
        fail("receiving from " + who(0) + " failed" + during(t) + ": " + std::strerror(reader.err));
      pollfd pfd{fd, POLLIN, 0};
      const int ready = ::poll(&pfd, 1, poll_ms(deadline));
      if (ready == 0 && Clock::now() >= deadline)
        fail("timed out after " + seconds_text(waited_s) + " waiting for " + who(0) + during(t));
    }
  }

  // ---- operations ----
  void request(Type t, std::size_t bytes, int root, const void* out, std::size_t out_bytes, void* in,
               std::size_t in_bytes) {
    check_usable();
    Header h;
    h.type = static_cast<std::uint32_t>(t);
    h.seq = seq_;
    h.v[0] = static_cast<std::int64_t>(bytes);
    h.v[1] = root;
    h.len = out_bytes;
    const auto raw = encode(h);
    const auto deadline = after(io_timeout_);
    send_or_fail(0, raw.data(), raw.size(), deadline, t);
    if (out_bytes) send_or_fail(0, out, out_bytes, deadline, t);
    const auto frame = receive_from_root(t, after(io_timeout_ + grace_), io_timeout_ + grace_, seq_, in_bytes);
    if (frame.payload.size() != in_bytes)
      fail("rank 0 answered " + std::to_string(frame.payload.size()) + " bytes where " + std::to_string(in_bytes) +
           " were expected" + during(t));
    if (in_bytes) std::memcpy(in, frame.payload.data(), in_bytes);
  }

  // Rank 0: every other rank's request for this call, checked to be the same
  // call with the same arguments. Index = rank; payloads as sent.
  std::vector<std::vector<char>> gather_requests(Type t, std::size_t bytes, int root) {
    check_usable();
    const auto n = static_cast<std::size_t>(size());
    std::vector<FrameReader> readers(n);
    std::vector<bool> done(n, false);
    done[0] = true;
    std::size_t remaining = n - 1;
    const auto deadline = after(io_timeout_);
    const std::string mine = std::string(type_name(static_cast<std::uint32_t>(t))) + " (bootstrap call #" +
                             std::to_string(seq_) + ")";
    while (remaining > 0) {
      std::vector<pollfd> pfds;
      std::vector<int> ranks;
      for (std::size_t r = 1; r < n; ++r) {
        if (done[r]) continue;
        pfds.push_back({fds_[r], POLLIN, 0});
        ranks.push_back(static_cast<int>(r));
      }
      const int ready = ::poll(pfds.data(), pfds.size(), poll_ms(deadline));
      if (ready < 0 && errno != EINTR) fail(std::string("poll failed") + during(t) + ": " + std::strerror(errno));
      if (ready <= 0) {
        if (Clock::now() < deadline) continue;
        std::string waiting;
        for (const int r : ranks) {
          if (!waiting.empty()) waiting += ", ";
          waiting += who(r);
        }
        fail("timed out after " + seconds_text(io_timeout_) + " waiting for " + waiting + during(t));
      }
      for (std::size_t i = 0; i < pfds.size(); ++i) {
        if (pfds[i].revents == 0) continue;
        const int r = ranks[i];
        auto& reader = readers[static_cast<std::size_t>(r)];
        for (;;) {
          const auto step = reader.pump(fds_[static_cast<std::size_t>(r)]);
          if (step == FrameReader::Step::again) break;
          if (step == FrameReader::Step::closed) fail(who(r) + " closed the connection" + during(t));
          if (step == FrameReader::Step::failed)
            fail("receiving from " + who(r) + " failed" + during(t) + ": " + std::strerror(reader.err));
          if (step == FrameReader::Step::done) {
            done[static_cast<std::size_t>(r)] = true;
            --remaining;
            break;
          }
          // The header: the same call, with the same arguments, as ours.
          const auto& h = reader.header;
          if (h.magic != kMagic) fail(who(r) + " sent a malformed message" + during(t));
          const std::string theirs =
              std::string(type_name(h.type)) + " (bootstrap call #" + std::to_string(h.seq) + ")";
          if (h.type != static_cast<std::uint32_t>(t) || h.seq != seq_)
            fail(who(r) + " called " + theirs + " where rank 0 called " + mine +
                 ": every rank must make the same bootstrap calls in the same order");
          if (h.v[0] != static_cast<std::int64_t>(bytes))
            fail(who(r) + " passed " + std::to_string(h.v[0]) + " bytes to " + mine + ", rank 0 passed " +
                 std::to_string(bytes));
          if (h.v[1] != root)
            fail(who(r) + " named root " + std::to_string(h.v[1]) + " in " + mine + ", rank 0 named root " +
                 std::to_string(root));
          const std::size_t expected_len =
              t == Type::all_gather ? bytes : (t == Type::broadcast && r == root ? bytes : 0);
          if (h.len != expected_len)
            fail(who(r) + " sent " + std::to_string(h.len) + " bytes" + during(t) + " where " +
                 std::to_string(expected_len) + " were expected");
          reader.payload.resize(h.len);
        }
      }
    }
    std::vector<std::vector<char>> payloads(n);
    for (std::size_t r = 1; r < n; ++r) payloads[r] = std::move(readers[r].payload);
    return payloads;
  }

  // Rank 0: answers every other rank; `payload_for(rank)` gives (data, bytes).
  template <typename PayloadFor>
  void reply_all(Type t, PayloadFor payload_for) {
    const auto deadline = after(io_timeout_);
    for (int r = 1; r < size(); ++r) {
      const auto [data, bytes] = payload_for(r);
      Header h;
      h.type = static_cast<std::uint32_t>(t);
      h.seq = seq_;
      h.len = bytes;
      const auto raw = encode(h);
      send_or_fail(r, raw.data(), raw.size(), deadline, t);
      if (bytes) send_or_fail(r, data, bytes, deadline, t);
    }
  }

  EnvRendezvousConfig config_;
  double connect_timeout_;
  double io_timeout_;
  double grace_;  // extra wait for non-zero ranks, so rank 0's diagnosis arrives first
  int local_size_ = 1;
  std::vector<std::string> hosts_;  // by rank
  std::vector<int> local_ranks_;    // by rank
  std::vector<int> fds_;            // rank 0: by rank ([0] unused); others: [0] = rank 0
  struct Pending {                  // rank 0, during the rendezvous: accepted, hello not yet read
    int fd;
    FrameReader reader;
  };
  std::vector<Pending> pending_;
  int listener_ = -1;
  std::uint64_t seq_ = 0;
  std::string broken_;  // the error that ended this bootstrap
};

}  // namespace

EnvRendezvousConfig env_rendezvous_from_environment() {
  EnvRendezvousConfig c;
  c.rank = required_int("RANK");
  c.world_size = required_int("WORLD_SIZE");
  c.local_rank = required_int("LOCAL_RANK");
  if (const auto lws = parse_launch_int("LOCAL_WORLD_SIZE", std::getenv("LOCAL_WORLD_SIZE"))) c.local_world_size = *lws;
  if (c.world_size > 1) {
    const char* addr = std::getenv("MASTER_ADDR");
    if (!addr)
      throw std::runtime_error("MASTER_ADDR is not set: with WORLD_SIZE=" + std::to_string(c.world_size) +
                               " the env bootstrap needs rank 0's host in MASTER_ADDR and a port in MASTER_PORT");
    c.master_addr = addr;
    const char* port = std::getenv("MASTER_PORT");
    if (!port)
      throw std::runtime_error("MASTER_PORT is not set: with WORLD_SIZE=" + std::to_string(c.world_size) +
                               " the env bootstrap needs a port in MASTER_PORT");
    const auto parsed = parse_launch_int("MASTER_PORT", port);
    if (*parsed < 1 || *parsed > 65535)
      throw std::runtime_error(std::string("MASTER_PORT='") + port + "' is not a port number (1-65535)");
    c.master_port = *parsed;
  }
  validate(c);
  return c;
}

std::unique_ptr<Bootstrap> make_env_bootstrap(const EnvRendezvousConfig& config, double connect_timeout_s,
                                              double io_timeout_s) {
  if (!(connect_timeout_s > 0) || !(io_timeout_s > 0))
    throw std::invalid_argument("env bootstrap timeouts must be positive");
  return std::make_unique<EnvBootstrap>(config, connect_timeout_s, io_timeout_s);
}

std::unique_ptr<Bootstrap> make_env_bootstrap(double connect_timeout_s, double io_timeout_s) {
  return make_env_bootstrap(env_rendezvous_from_environment(), connect_timeout_s, io_timeout_s);
}

}  // namespace redline
