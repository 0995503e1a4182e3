#include "collectives/watchdog.hpp"

#include "harness/core/clock.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace redline {
namespace {

constexpr std::uint64_t kGoodbye = ~std::uint64_t{0};
// Other ranks give rank 0 this long past the timeout to name the culprits first.
constexpr double kGraceSeconds = 5;
// How long a failing rank waits for the communicator abort before exiting.
constexpr double kAbortOperationsSeconds = 10;

bool send_all(int fd, const void* data, std::size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

bool recv_all(int fd, void* data, std::size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::recv(fd, p, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

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

constexpr double kRegisterSeconds = 120;

int connect_to(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0 || !found)
    throw std::runtime_error("watchdog: cannot resolve rank 0's address '" + host +
                             "' (set REDLINE_WATCHDOG_ADDR or MASTER_ADDR, or --timeout 0)");
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
      fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        ::close(fd);
        fd = -1;
      }
    }
    if (fd < 0) usleep(100000);
  }
  freeaddrinfo(found);
  if (fd < 0)
    throw std::runtime_error("watchdog: cannot connect to rank 0 at " + host + ":" + service + ": " +
                             std::strerror(errno));
  return fd;
}

// A listening socket on an ephemeral port of every interface: IPv6
// dual-stack (IPv4 peers arrive as mapped addresses), or IPv4 where IPv6 is off.
int listen_on_any_port(std::uint16_t& port) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(fd, SOMAXCONN) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin6_port);
      return fd;
    }
    ::close(fd);
  }
  fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, SOMAXCONN) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error(std::string("watchdog: cannot listen for the other ranks: ") + std::strerror(errno));
  port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace

Watchdog::Watchdog(Bootstrap& bootstrap, double timeout_seconds, std::vector<std::string> hosts,
                   std::function<void()> abort_operations)
    : bootstrap_(bootstrap), timeout_(timeout_seconds), hosts_(std::move(hosts)),
      abort_operations_(std::move(abort_operations)) {
  if (timeout_ <= 0 || bootstrap_.size() == 1) return;  // one rank cannot wait for another

  std::uint16_t port = 0;
  int listener = -1;
  if (bootstrap_.rank() == 0) {
    listener = listen_on_any_port(port);
  }
  bootstrap_.broadcast(&port, sizeof port, 0);
  const std::string address = rank0_address(bootstrap_);

  if (bootstrap_.rank() == 0) {
    peers_.assign(bootstrap_.size(), -1);
    reached_.assign(bootstrap_.size(), 0);
    for (int accepted = 1; accepted < bootstrap_.size(); ++accepted) {
      pollfd pfd{listener, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(kRegisterSeconds * 1000)) <= 0)
        throw std::runtime_error("watchdog: only " + std::to_string(accepted - 1) + " of " +
                                 std::to_string(bootstrap_.size() - 1) + " ranks connected to rank 0 within " +
                                 std::to_string(static_cast<int>(kRegisterSeconds)) +
                                 " s (a firewall? set REDLINE_WATCHDOG_ADDR, or --timeout 0)");
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      std::int32_t rank = -1;
      if (fd < 0 || !recv_all(fd, &rank, sizeof rank) || rank < 1 || rank >= bootstrap_.size() || peers_[rank] >= 0)
        throw std::runtime_error("watchdog: a rank failed to register with rank 0");
      peers_[rank] = fd;
    }
    ::close(listener);
  } else {
    const int fd = connect_to(address, port);
    const std::int32_t rank = bootstrap_.rank();
    if (!send_all(fd, &rank, sizeof rank)) throw std::runtime_error("watchdog: cannot register with rank 0");
    peers_.push_back(fd);
  }
  for (int fd : peers_)
    if (fd >= 0) {
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  if (!thread_.joinable()) return;
  // A clean goodbye, so the peers tell a finished rank from a dead one.
  stopping_ = true;
  thread_.join();
  for (int fd : peers_)
    if (fd >= 0) {
      send_all(fd, &kGoodbye, sizeof kGoodbye);
      ::close(fd);
    }
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
    deadline_ = steady_seconds() + timeout_ + (bootstrap_.rank() == 0 ? 0 : kGraceSeconds);
    if (bootstrap_.rank() == 0) reached_[0] = index + 1;
  }
  if (bootstrap_.rank() != 0) send_all(peers_[0], &index, sizeof index);
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

// Called with mutex_ held, so abort_operations_ cannot change underneath.
void Watchdog::fail(const std::string& message) {
  std::fprintf(stderr, "allreduce_bench: rank %d: %s\n", bootstrap_.rank(), message.c_str());
  std::fflush(stderr);
  if (abort_operations_) {
    // ncclCommAbort can block: on a proxy thread, on peers that never abort,
    // or behind the main thread that holds the communicator. It gets a
    // bounded time on a thread of its own; then the run ends regardless.
    auto returned = std::make_shared<std::atomic<bool>>(false);
    try {
      std::thread([abort_operations = abort_operations_, returned] {
        abort_operations();
        *returned = true;
      }).detach();
    } catch (const std::system_error&) {
      *returned = true;  // no thread to be had: end the run without the abort
    }
    const double until = steady_seconds() + kAbortOperationsSeconds;
    while (!*returned && steady_seconds() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!*returned) {
      std::fprintf(stderr, "allreduce_bench: rank %d: the communicator abort did not return within %d s; exiting without it\n",
                   bootstrap_.rank(), static_cast<int>(kAbortOperationsSeconds));
      std::fflush(stderr);
    }
  }
  bootstrap_.abort_all(1);
  std::_Exit(1);  // abort_all does not return; this says so to the compiler
}

void Watchdog::watch() {
  const bool is_root = bootstrap_.rank() == 0;
  std::vector<bool> finished(peers_.size(), false);  // peers that said goodbye
  while (!stopping_) {
    std::vector<pollfd> fds;
    std::vector<int> ranks;
    for (std::size_t r = 0; r < peers_.size(); ++r)
      if (peers_[r] >= 0 && !finished[r]) {
        fds.push_back({peers_[r], POLLIN, 0});
        ranks.push_back(static_cast<int>(is_root ? r : 0));
      }
    if (::poll(fds.data(), fds.size(), 100) > 0) {
      for (std::size_t k = 0; k < fds.size(); ++k) {
        if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const int rank = ranks[k];
        std::uint64_t index = 0;
        const bool got = recv_all(fds[k].fd, &index, sizeof index);
        const std::size_t slot = is_root ? static_cast<std::size_t>(rank) : 0;
        if (got && index == kGoodbye) {
          finished[slot] = true;
        } else if (!got) {
          std::lock_guard lock(mutex_);
          fail("rank " + rank_name(rank) + " died or lost its connection" +
               (label_.empty() ? "" : " during " + label_) + "; aborting the run");
        } else if (is_root) {
          std::lock_guard lock(mutex_);
          reached_[rank] = std::max(reached_[rank], index + 1);
        }
      }
    }
    std::lock_guard lock(mutex_);
    if (deadline_ == 0 || steady_seconds() < deadline_) continue;
    std::string message = label_ + " did not finish within " + std::to_string(static_cast<int>(timeout_)) + " s";
    if (is_root) {
      std::string missing, waiting;
      for (std::size_t r = 0; r < reached_.size(); ++r) {
        std::string& list = reached_[r] > index_ ? waiting : missing;
        list += (list.empty() ? "" : ", ") + rank_name(static_cast<int>(r));
      }
      message += ". Ranks that never reached it: " + (missing.empty() ? std::string("none (all are stuck inside it)") : missing) +
                 ". Ranks waiting in it: " + (waiting.empty() ? std::string("none") : waiting);
    }
    fail("TIMEOUT: " + message + "; aborting");
  }
}

}  // namespace redline
