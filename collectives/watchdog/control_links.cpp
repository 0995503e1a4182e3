#include "collectives/watchdog/control_links.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/bootstrap/tcp.hpp"

namespace redline {
namespace {

// How long a rank tries to reach rank 0's listener (name lookup included).
constexpr double kConnectSeconds = 5;

// The first frame on a new connection: v[0] is the sender's rank.
constexpr std::uint32_t kHello = RankLinks::kWatchdogTypes;

// Where the other ranks reach rank 0: REDLINE_WATCHDOG_ADDR, else MASTER_ADDR
// (torchrun-style launches), else rank 0's real host name (not the display
// name REDLINE_HOSTNAME may give it).
std::string rank0_address(Bootstrap& bootstrap) {
  for (const char* var : {"REDLINE_WATCHDOG_ADDR", "MASTER_ADDR"})
    if (const char* v = std::getenv(var); v && *v) return v;
  char name[256] = {};
  if (bootstrap.rank() == 0 && gethostname(name, sizeof name - 1) != 0) std::strcpy(name, "localhost");
  bootstrap.broadcast(name, sizeof name, 0);
  return name;
}

// One frame from a blocking wait on `fd` until `deadline`; false when none came whole.
bool read_hello(int fd, tcp::Clock::time_point deadline, tcp::Header& hello) {
  tcp::FrameReader reader;
  for (;;) {
    const auto step = reader.pump(fd);
    if (step == tcp::FrameReader::Step::header) {
      hello = reader.header;
      return hello.magic == tcp::kMagic && hello.type == kHello && hello.len == 0;
    }
    if (step != tcp::FrameReader::Step::again) return false;
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, tcp::poll_ms(deadline)) == 0 && tcp::Clock::now() >= deadline) return false;
  }
}

std::runtime_error too_few(int joined, int expected, double seconds) {
  return std::runtime_error("watchdog: only " + std::to_string(joined) + " of " + std::to_string(expected) +
                            " ranks connected to rank 0 within " + tcp::seconds_text(seconds) +
                            " (a firewall? set REDLINE_WATCHDOG_ADDR, or --timeout 0)");
}

// Rank 0: one connection from every other rank, each introduced by its hello.
std::vector<int> accept_ranks(int listener, int size, double register_seconds) {
  std::vector<int> fds(static_cast<std::size_t>(size), -1);
  const auto deadline = tcp::after(register_seconds);
  for (int joined = 0; joined < size - 1;) {
    pollfd pfd{listener, POLLIN, 0};
    if (::poll(&pfd, 1, tcp::poll_ms(deadline)) <= 0) {
      if (tcp::Clock::now() < deadline) continue;
      for (const int fd : fds)
        if (fd >= 0) ::close(fd);
      throw too_few(joined, size - 1, register_seconds);
    }
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    tcp::set_nonblocking(fd);
    tcp::Header hello;
    const bool ok = read_hello(fd, deadline, hello);
    const auto rank = hello.v[0];
    if (!ok || rank < 1 || rank >= size || fds[static_cast<std::size_t>(rank)] >= 0)
      throw std::runtime_error("watchdog: a rank failed to register with rank 0");
    fds[static_cast<std::size_t>(rank)] = fd;
    ++joined;
  }
  return fds;
}

int connect_to_rank0(Bootstrap& bootstrap, const std::string& address, int port, double register_seconds) {
  std::string last_error;
  const auto deadline = tcp::after(register_seconds);
  const int fd = tcp::connect_until(address, port, deadline, last_error);
  if (fd < 0)
    throw std::runtime_error("watchdog: cannot connect to rank 0 at " + address + ":" + std::to_string(port) + ": " +
                             last_error + " (set REDLINE_WATCHDOG_ADDR or MASTER_ADDR, or --timeout 0)");
  tcp::Header hello;
  hello.type = kHello;
  hello.v[0] = bootstrap.rank();
  int err = 0;
  if (tcp::send_frame(fd, hello, nullptr, deadline, err) != tcp::Io::ok) {
    ::close(fd);
    throw std::runtime_error("watchdog: cannot register with rank 0");
  }
  return fd;
}

}  // namespace

ControlLinks connect_control_links(Bootstrap& bootstrap, double register_seconds) {
  ControlLinks control;
  if ((control.links = bootstrap.control_links())) return control;
  std::int32_t port = 0;
  int listener = -1;
  if (bootstrap.rank() == 0) {
    int err = 0;
    listener = tcp::listen_on(0, bootstrap.size(), err);
    if (listener < 0)
      throw std::runtime_error(std::string("watchdog: cannot listen for the other ranks: ") + std::strerror(err));
    port = tcp::local_port(listener);
  }
  bootstrap.broadcast(&port, sizeof port, 0);
  const std::string address = rank0_address(bootstrap);
  std::vector<int> fds;
  if (bootstrap.rank() == 0) {
    try {
      fds = accept_ranks(listener, bootstrap.size(), register_seconds);
    } catch (...) {
      ::close(listener);
      throw;
    }
    ::close(listener);
  } else {
    // Rank 0 listens before it shares its port, so a rank that cannot connect
    // within seconds has a wrong address (or a firewall in the way): it fails
    // then, which aborts the whole run, instead of retrying while rank 0
    // waits out register_seconds.
    fds = {connect_to_rank0(bootstrap, address, port, std::min(register_seconds, kConnectSeconds))};
  }
  control.owned = std::make_unique<RankLinks>(std::move(fds));
  control.links = control.owned.get();
  return control;
}

}  // namespace redline
