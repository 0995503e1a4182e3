// The TCP rendezvous behind torchrun-style launches: rank 0 accepts one
// connection per rank and relays all_gather, broadcast and barrier. Every
// wait has a deadline and every failure names the rank it came from, so a
// dead or stuck rank ends the run with a message instead of a hang.
#include "collectives/bootstrap/env_bootstrap.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/watchdog/rank_links.hpp"
#include "collectives/bootstrap/tcp.hpp"

namespace redline {
namespace {

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
// Messages: tcp::Header frames of these types (all on the bootstrap lane of
// RankLinks); v[] carries hello {version, rank, world_size, local_rank},
// welcome {world_size}, operations {bytes, root}.

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

tcp::Header header_of(Type t, std::uint64_t seq = 0, std::size_t len = 0) {
  tcp::Header h;
  h.type = static_cast<std::uint32_t>(t);
  h.seq = seq;
  h.len = len;
  return h;
}

// A connection accepted by rank 0 whose hello is still on its way.
struct Pending {
  int fd;
  tcp::FrameReader reader;
};

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
  RankLinks* control_links() override { return links_.get(); }

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
    if (links_) links_->close_now();
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
    if (rank() == 0) tell_everyone(message.substr(0, kMaxErrorText));
    close_all();
    throw std::runtime_error(message);
  }

  void tell_everyone(const std::string& text) {
    const auto deadline = tcp::after(std::min(2.0, io_timeout_));
    const tcp::Header h = header_of(Type::error, seq_, text.size());
    int err = 0;
    if (links_) {
      for (int r = 1; r < links_->peers(); ++r) links_->send(r, h, text.data(), deadline, err);
      return;
    }
    // During the rendezvous: the ranks admitted so far, and those whose hello is still on its way.
    std::vector<int> told = fds_;
    for (const auto& p : pending_) told.push_back(p.fd);
    for (const int fd : told)
      if (fd >= 0) tcp::send_frame(fd, h, text.data(), deadline, err);
  }

  void close_all() {
    if (links_) links_->close();
    for (int& fd : fds_) {
      tcp::drain_and_close(fd);
      fd = -1;
    }
    for (const auto& p : pending_) tcp::drain_and_close(p.fd);
    pending_.clear();
    if (listener_ >= 0) ::close(listener_);
    listener_ = -1;
  }

  void send_or_fail(int peer, const tcp::Header& h, const void* payload, tcp::Clock::time_point deadline, Type t) {
    int err = 0;
    switch (links_->send(peer, h, payload, deadline, err)) {
      case tcp::Io::ok: return;
      case tcp::Io::closed:
        if (rank() != 0) fail_with_pending_error(who(peer) + " closed the connection" + during(t));
        fail(who(peer) + " closed the connection" + during(t));
      case tcp::Io::timed_out:
        fail("timed out after " + tcp::seconds_text(io_timeout_) + " sending to " + who(peer) + during(t));
      case tcp::Io::failed: fail("sending to " + who(peer) + " failed" + during(t) + ": " + std::strerror(err));
    }
  }

  // When rank 0 hung up on us it usually said why first: prefer its words.
  [[noreturn]] void fail_with_pending_error(const std::string& fallback) {
    const auto got = links_->next({0}, tcp::after(0.5));
    if (got.status == RankLinks::Received::Status::frame &&
        got.frame.header.type == static_cast<std::uint32_t>(Type::error) && got.frame.payload.size() <= kMaxErrorText)
      fail(std::string(got.frame.payload.begin(), got.frame.payload.end()));
    fail(fallback);
  }

  // The failure a link's end means, named after the peer.
  [[noreturn]] void fail_ended(const RankLinks::Received& got, Type t) {
    switch (got.ending) {
      case RankLinks::Ending::malformed: fail(who(got.peer) + " sent a malformed message" + during(t));
      case RankLinks::Ending::failed:
        fail("receiving from " + who(got.peer) + " failed" + during(t) + ": " + std::strerror(got.err));
      default: fail(who(got.peer) + " closed the connection" + during(t));
    }
  }

  // ---- rendezvous, rank 0 ----
  void serve_rendezvous() {
    fds_.assign(static_cast<std::size_t>(size()), -1);
    open_listener();
    const auto deadline = tcp::after(connect_timeout_);
    for (int joined = 1; joined < size();) {
      std::vector<pollfd> pfds{{listener_, POLLIN, 0}};
      for (const auto& p : pending_) pfds.push_back({p.fd, POLLIN, 0});
      const int ready = ::poll(pfds.data(), pfds.size(), tcp::poll_ms(deadline));
      if (ready < 0 && errno != EINTR) fail(std::string("poll failed during the rendezvous: ") + std::strerror(errno));
      if (ready <= 0 && tcp::Clock::now() >= deadline) fail_missing_ranks();
      if (pfds[0].revents & POLLIN) accept_pending();
      joined += read_hellos();
    }
    for (const auto& p : pending_) ::close(p.fd);  // more than WORLD_SIZE ranks came: they see end-of-file
    pending_.clear();
    ::close(listener_);  // frees the port for the next run at once
    listener_ = -1;
    check_local_ranks();
    links_ = std::make_unique<RankLinks>(std::move(fds_));
    fds_.clear();
    send_welcome();
  }

  [[noreturn]] void fail_missing_ranks() {
    std::string missing;
    int count = 0;
    for (int r = 1; r < size(); ++r) {
      if (fds_[static_cast<std::size_t>(r)] >= 0) continue;
      if (count++ >= 16) continue;
      if (!missing.empty()) missing += ", ";
      missing += std::to_string(r);
    }
    if (count > 16) missing += ", ... (" + std::to_string(count) + " in all)";
    fail("rank 0 (host " + config_.host_name + ") timed out after " + tcp::seconds_text(connect_timeout_) +
         " waiting for rank" + (count > 1 ? "s " : " ") + missing + " to connect to port " +
         std::to_string(config_.master_port) + " (" + endpoint() +
         "): are they running, with the same MASTER_ADDR and MASTER_PORT?");
  }

  void accept_pending() {
    const int fd = ::accept(listener_, nullptr, nullptr);
    if (fd < 0) return;
    tcp::set_nonblocking(fd);
    pending_.push_back({fd, tcp::FrameReader()});
  }

  // Reads the hellos that have come; admits their ranks. Returns how many joined.
  int read_hellos() {
    int joined = 0;
    for (std::size_t i = 0; i < pending_.size();) {
      auto& p = pending_[i];
      auto step = p.reader.pump(p.fd);
      if (step == tcp::FrameReader::Step::header) {
        const auto& h = p.reader.header;
        if (h.magic != tcp::kMagic || h.type != static_cast<std::uint32_t>(Type::hello) || h.len > kMaxHostName) {
          step = tcp::FrameReader::Step::failed;  // not one of ours (a port scan, a health check): ignore it
        } else {
          p.reader.payload.resize(h.len);
          step = p.reader.pump(p.fd);
        }
      }
      if (step == tcp::FrameReader::Step::again) {
        ++i;
        continue;
      }
      const Pending done = std::move(p);
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
      if (step != tcp::FrameReader::Step::done) {  // left before saying hello, or a stranger
        ::close(done.fd);
        continue;
      }
      admit(done.fd, done.reader.header, std::string(done.reader.payload.begin(), done.reader.payload.end()));
      ++joined;
    }
    return joined;
  }

  void open_listener() {
    int err = 0;
    listener_ = tcp::listen_on(config_.master_port, size(), err);
    if (listener_ >= 0) return;
    fail("rank 0 (host " + config_.host_name + ") cannot listen on port " + std::to_string(config_.master_port) +
         " (" + endpoint() + "): " + std::strerror(err) +
         (err == EADDRINUSE ? " (another program, or another rank 0, holds the port)" : ""));
  }

  void admit(int fd, const tcp::Header& h, const std::string& host) {
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

  // Two ranks on one host with the same LOCAL_RANK would pick the same GPU.
  void check_local_ranks() {
    for (std::size_t a = 0; a < hosts_.size(); ++a)
      for (std::size_t b = a + 1; b < hosts_.size(); ++b)
        if (hosts_[a] == hosts_[b] && local_ranks_[a] == local_ranks_[b])
          fail("rank " + std::to_string(a) + " and rank " + std::to_string(b) + " both run on host " + hosts_[a] +
               " with LOCAL_RANK=" + std::to_string(local_ranks_[a]));
  }

  // Every rank's host and local rank, in rank order: (local rank, host length) headers, each followed by the host.
  void send_welcome() {
    std::string table;
    for (int r = 0; r < size(); ++r) {
      const auto& host = hosts_[static_cast<std::size_t>(r)];
      tcp::Header entry;
      entry.v[0] = local_ranks_[static_cast<std::size_t>(r)];
      entry.len = host.size();
      const auto raw = tcp::encode(entry);
      table.append(reinterpret_cast<const char*>(raw.data()), raw.size());
      table += host;
    }
    tcp::Header welcome = header_of(Type::welcome, 0, table.size());
    welcome.v[0] = size();
    const auto deadline = tcp::after(io_timeout_);
    for (int r = 1; r < size(); ++r) send_or_fail(r, welcome, table.data(), deadline, Type::welcome);
  }

  // ---- rendezvous, other ranks ----
  void join_rendezvous() {
    hosts_[0] = config_.master_addr;  // until rank 0 tells us its host name
    std::string last_error;
    const int fd =
        tcp::connect_until(config_.master_addr, config_.master_port, tcp::after(connect_timeout_), last_error);
    if (fd < 0)
      fail(who(rank()) + " could not connect to rank 0 at " + endpoint() + " within " +
           tcp::seconds_text(connect_timeout_) + ": " + last_error);
    links_ = std::make_unique<RankLinks>(std::vector<int>{fd});

    tcp::Header hello = header_of(Type::hello, 0, config_.host_name.size());
    hello.v[0] = kProtocolVersion;
    hello.v[1] = rank();
    hello.v[2] = size();
    hello.v[3] = config_.local_rank;
    send_or_fail(0, hello, config_.host_name.data(), tcp::after(io_timeout_), Type::hello);

    // Rank 0 answers when the last rank has joined, within its own connect
    // timeout, which started before we connected.
    const auto frame =
        receive_from_root(Type::welcome, tcp::after(connect_timeout_ + grace_), connect_timeout_ + grace_, kAnySeq,
                          static_cast<std::size_t>(size()) * (tcp::kHeaderBytes + kMaxHostName));
    if (frame.header.v[0] != size())
      fail("rank 0 has WORLD_SIZE=" + std::to_string(frame.header.v[0]) + " but " + who(rank()) +
           " has WORLD_SIZE=" + std::to_string(size()));
    read_rank_table(frame.payload);
  }

  void read_rank_table(const std::vector<char>& table) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(table.data());
    const unsigned char* end = p + table.size();
    for (int r = 0; r < size(); ++r) {
      tcp::RawHeader entry_raw{};
      if (end - p < static_cast<std::ptrdiff_t>(tcp::kHeaderBytes)) fail("rank 0 sent a malformed rank table");
      std::memcpy(entry_raw.data(), p, tcp::kHeaderBytes);
      p += tcp::kHeaderBytes;
      const tcp::Header entry = tcp::decode(entry_raw);
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
  RankLinks::Frame receive_from_root(Type t, tcp::Clock::time_point deadline, double waited_s, std::uint64_t seq,
                                     std::size_t max_len) {
    auto got = links_->next({0}, deadline);
    if (got.status == RankLinks::Received::Status::timed_out)
      fail("timed out after " + tcp::seconds_text(waited_s) + " waiting for " + who(0) + during(t));
    if (got.status == RankLinks::Received::Status::ended) fail_ended(got, t);
    const auto& h = got.frame.header;
    if (h.type == static_cast<std::uint32_t>(Type::error)) {
      if (h.len > kMaxErrorText) fail("rank 0 sent a malformed error message" + during(t));
      fail(std::string(got.frame.payload.begin(), got.frame.payload.end()));
    }
    if (h.type != static_cast<std::uint32_t>(t) || (seq != kAnySeq && h.seq != seq))
      fail("rank 0 answered " + std::string(type_name(h.type)) + " (bootstrap call #" + std::to_string(h.seq) +
           ") to " + type_name(static_cast<std::uint32_t>(t)) + " (bootstrap call #" + std::to_string(seq_) + ")");
    if (h.len > max_len)
      fail("rank 0 answered " + std::to_string(h.len) + " bytes where at most " + std::to_string(max_len) +
           " were expected" + during(t));
    return std::move(got.frame);
  }

  // ---- operations ----
  void request(Type t, std::size_t bytes, int root, const void* out, std::size_t out_bytes, void* in,
               std::size_t in_bytes) {
    check_usable();
    tcp::Header h = header_of(t, seq_, out_bytes);
    h.v[0] = static_cast<std::int64_t>(bytes);
    h.v[1] = root;
    send_or_fail(0, h, out, tcp::after(io_timeout_), t);
    const auto frame = receive_from_root(t, tcp::after(io_timeout_ + grace_), io_timeout_ + grace_, seq_, in_bytes);
    if (frame.payload.size() != in_bytes)
      fail("rank 0 answered " + std::to_string(frame.payload.size()) + " bytes where " + std::to_string(in_bytes) +
           " were expected" + during(t));
    if (in_bytes) std::memcpy(in, frame.payload.data(), in_bytes);
  }

  // Rank 0: every other rank's request for this call, checked to be the same
  // call with the same arguments. Index = rank; payloads as sent.
  std::vector<std::vector<char>> gather_requests(Type t, std::size_t bytes, int root) {
    check_usable();
    std::vector<std::vector<char>> payloads(static_cast<std::size_t>(size()));
    std::vector<int> waiting;
    for (int r = 1; r < size(); ++r) waiting.push_back(r);
    const auto deadline = tcp::after(io_timeout_);
    while (!waiting.empty()) {
      auto got = links_->next(waiting, deadline);
      if (got.status == RankLinks::Received::Status::timed_out) {
        std::string names;
        for (const int r : waiting) names += (names.empty() ? "" : ", ") + who(r);
        fail("timed out after " + tcp::seconds_text(io_timeout_) + " waiting for " + names + during(t));
      }
      if (got.status == RankLinks::Received::Status::ended) fail_ended(got, t);
      check_request(got.peer, got.frame.header, t, bytes, root);
      payloads[static_cast<std::size_t>(got.peer)] = std::move(got.frame.payload);
      waiting.erase(std::find(waiting.begin(), waiting.end(), got.peer));
    }
    return payloads;
  }

  // Rank `r`'s request is the same call, with the same arguments, as rank 0's.
  void check_request(int r, const tcp::Header& h, Type t, std::size_t bytes, int root) {
    const std::string mine =
        std::string(type_name(static_cast<std::uint32_t>(t))) + " (bootstrap call #" + std::to_string(seq_) + ")";
    const std::string theirs = std::string(type_name(h.type)) + " (bootstrap call #" + std::to_string(h.seq) + ")";
    if (h.type != static_cast<std::uint32_t>(t) || h.seq != seq_)
      fail(who(r) + " called " + theirs + " where rank 0 called " + mine +
           ": every rank must make the same bootstrap calls in the same order");
    if (h.v[0] != static_cast<std::int64_t>(bytes))
      fail(who(r) + " passed " + std::to_string(h.v[0]) + " bytes to " + mine + ", rank 0 passed " +
           std::to_string(bytes));
    if (h.v[1] != root)
      fail(who(r) + " named root " + std::to_string(h.v[1]) + " in " + mine + ", rank 0 named root " +
           std::to_string(root));
    const std::size_t expected_len = t == Type::all_gather ? bytes : (t == Type::broadcast && r == root ? bytes : 0);
    if (h.len != expected_len)
      fail(who(r) + " sent " + std::to_string(h.len) + " bytes" + during(t) + " where " + std::to_string(expected_len) +
           " were expected");
  }

  // Rank 0: answers every other rank; `payload_for(rank)` gives (data, bytes).
  template <typename PayloadFor>
  void reply_all(Type t, PayloadFor payload_for) {
    const auto deadline = tcp::after(io_timeout_);
    for (int r = 1; r < size(); ++r) {
      const auto [data, bytes] = payload_for(r);
      send_or_fail(r, header_of(t, seq_, bytes), data, deadline, t);
    }
  }

  EnvRendezvousConfig config_;
  double connect_timeout_;
  double io_timeout_;
  double grace_;  // extra wait for non-zero ranks, so rank 0's diagnosis arrives first
  int local_size_ = 1;
  std::vector<std::string> hosts_;  // by rank
  std::vector<int> local_ranks_;    // by rank
  std::vector<int> fds_;            // rank 0 during the rendezvous: by rank ([0] unused)
  std::vector<Pending> pending_;    // rank 0 during the rendezvous: accepted, hello not yet read
  int listener_ = -1;
  std::unique_ptr<RankLinks> links_;  // after the rendezvous (rank 0) or once connected (other ranks)
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
