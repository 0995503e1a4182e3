// The TCP pieces the run's control connections are made of (the env
// bootstrap's rendezvous and the watchdog's side channel): deadlines,
// listening, connecting with retries, and framed messages read and written
// on non-blocking sockets, so no wait is ever unbounded.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace redline::tcp {

using Clock = std::chrono::steady_clock;

Clock::time_point after(double seconds);
// Milliseconds left until `deadline` for poll(2), at least 0 and at most 60 s
// (a long wait is polled again, so the caller rechecks its clock).
int poll_ms(Clock::time_point deadline);
// "2 s", "0.5 s": for messages that say how long was waited.
std::string seconds_text(double seconds);

// ---------------------------------------------------------------------------
// Frames: a fixed big-endian header, then `len` payload bytes.

inline constexpr std::uint32_t kMagic = 0x52444c4e;  // "RDLN"

struct Header {
  std::uint32_t magic = kMagic;
  std::uint32_t type = 0;            // what the frame is; its sender's protocol defines the values
  std::uint64_t seq = 0;             // the sender's call number, where its protocol counts calls
  std::int64_t v[4] = {0, 0, 0, 0};  // small arguments, by type
  std::uint64_t len = 0;             // payload bytes
};
inline constexpr std::size_t kHeaderBytes = 4 + 4 + 8 + 4 * 8 + 8;
using RawHeader = std::array<unsigned char, kHeaderBytes>;

RawHeader encode(const Header& header);
Header decode(const RawHeader& raw);

// How a read or write ended: `closed` is the peer gone (end of file or a
// reset), `failed` any other socket error.
enum class Io { ok, closed, timed_out, failed };

// Writes all `bytes` to a non-blocking socket, waiting for room until `deadline`.
Io send_all(int fd, const void* data, std::size_t bytes, Clock::time_point deadline, int& err);
// The header and its payload (header.len bytes), one after the other.
Io send_frame(int fd, const Header& header, const void* payload, Clock::time_point deadline, int& err);

// Reads one frame from a non-blocking socket in pieces as the bytes arrive,
// so one thread can wait on many sockets at once.
struct FrameReader {
  enum class Step {
    again,   // nothing more to read now
    header,  // the header is in: check it, size `payload`, pump again
    done,    // header and payload are in
    closed,  // the peer is gone
    failed,  // a socket error (err)
  };
  RawHeader raw{};
  std::size_t got = 0;
  bool have_header = false;
  Header header;
  std::vector<char> payload;  // sized by the caller once it accepts the header
  std::size_t payload_got = 0;
  int err = 0;

  void reset() { *this = FrameReader(); }
  Step pump(int fd);
};

// ---------------------------------------------------------------------------
// Sockets

// Non-blocking, with Nagle off: control messages are small and waited for.
void set_nonblocking(int fd);

// A non-blocking listening socket on `port` (0: any free port) of every
// interface: IPv6 with IPv4-mapped peers where the host has IPv6, else IPv4.
// -1 with `err` set when it cannot (EADDRINUSE: the port is taken).
int listen_on(int port, int backlog, int& err);
// The port a listening socket got.
int local_port(int fd);

// Connects to host:port, retrying the name lookup and the connection with a
// growing pause (50 ms to 1 s) until `deadline`: the peer may not listen yet,
// and a container's DNS name may appear late. A non-blocking socket, or -1
// with `last_error` saying what the last attempt met.
int connect_until(const std::string& host, int port, Clock::time_point deadline, std::string& last_error);

// Reads what is left unread, then closes: closing with unread data would send
// a reset, which can discard the last message just sent to that peer.
void drain_and_close(int fd);

}  // namespace redline::tcp
