#include "collectives/bootstrap/tcp.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

namespace redline::tcp {
namespace {

bool is_reset(int err) { return err == ECONNRESET || err == EPIPE || err == ENOTCONN || err == ECONNABORTED; }

void put(unsigned char*& p, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) *p++ = static_cast<unsigned char>(v >> (8 * i));
}

std::uint64_t get(const unsigned char*& p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | *p++;
  return v;
}

// One non-blocking connection attempt to `address`, waiting at most 5 s (or
// until `deadline`) for it to complete. The socket, or -1 with `err`.
int try_connect(const addrinfo& address, Clock::time_point deadline, int& err) {
  const int fd = ::socket(address.ai_family, address.ai_socktype | SOCK_CLOEXEC, address.ai_protocol);
  if (fd < 0) {
    err = errno;
    return -1;
  }
  set_nonblocking(fd);
  err = 0;
  if (::connect(fd, address.ai_addr, address.ai_addrlen) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd pfd{fd, POLLOUT, 0};
      const int ready = ::poll(&pfd, 1, std::min(poll_ms(deadline), 5000));
      socklen_t len = sizeof err;
      err = ready > 0 ? 0 : ETIMEDOUT;
      if (ready > 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
  }
  if (err == 0) return fd;
  ::close(fd);
  return -1;
}

// Every address `host` resolves to, each tried once. The socket, or -1 with `last_error`.
int connect_once(const std::string& host, const std::string& port, Clock::time_point deadline,
                 std::string& last_error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int gai = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (gai != 0) last_error = "cannot resolve " + host + ": " + gai_strerror(gai);
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    int err = 0;
    fd = try_connect(*a, deadline, err);
    if (fd < 0) last_error = std::strerror(err);
  }
  if (found) ::freeaddrinfo(found);
  return fd;
}

}  // namespace

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int poll_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count() + 1;
  return static_cast<int>(std::clamp<long long>(left, 0, 60'000));
}

std::string seconds_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", seconds);
  return buf;
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

Io send_frame(int fd, const Header& header, const void* payload, Clock::time_point deadline, int& err) {
  const RawHeader raw = encode(header);
  const Io io = send_all(fd, raw.data(), raw.size(), deadline, err);
  if (io != Io::ok || header.len == 0) return io;
  return send_all(fd, payload, header.len, deadline, err);
}

FrameReader::Step FrameReader::pump(int fd) {
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

void set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int listen_on(int port, int backlog, int& err) {
  err = 0;
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
    const auto net_port = htons(static_cast<std::uint16_t>(port));
    if (family == AF_INET6) {
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      auto* addr = reinterpret_cast<sockaddr_in6*>(&storage);
      addr->sin6_family = AF_INET6;
      addr->sin6_addr = in6addr_any;
      addr->sin6_port = net_port;
      len = sizeof *addr;
    } else {
      auto* addr = reinterpret_cast<sockaddr_in*>(&storage);
      addr->sin_family = AF_INET;
      addr->sin_addr.s_addr = htonl(INADDR_ANY);
      addr->sin_port = net_port;
      len = sizeof *addr;
    }
    if (::bind(fd, reinterpret_cast<sockaddr*>(&storage), len) == 0 &&
        ::listen(fd, std::clamp(backlog, 1, SOMAXCONN)) == 0) {
      set_nonblocking(fd);
      return fd;
    }
    err = errno;
    ::close(fd);
    if (err == EADDRINUSE) break;  // IPv4 would find it taken too
  }
  return -1;
}

int local_port(int fd) {
  sockaddr_storage storage{};
  socklen_t len = sizeof storage;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &len) != 0) return -1;
  if (storage.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
}

int connect_until(const std::string& host, int port, Clock::time_point deadline, std::string& last_error) {
  last_error = "no attempt";
  auto backoff = std::chrono::milliseconds(50);
  const std::string service = std::to_string(port);
  for (;;) {
    const int fd = connect_once(host, service, deadline, last_error);
    if (fd >= 0 || Clock::now() >= deadline) return fd;
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - Clock::now()));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

void drain_and_close(int fd) {
  if (fd < 0) return;
  ::shutdown(fd, SHUT_WR);
  char buf[4096];
  for (int i = 0; i < 256 && ::recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0; ++i) {
  }
  ::close(fd);
}

}  // namespace redline::tcp
