#include "harness/core/interrupt.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace redline {
namespace {

std::atomic<int> g_signal{0};
std::atomic<int> g_child_group{0};
std::atomic<bool> g_announce{true};
std::atomic<long long> g_first_signal_ns{0};  // CLOCK_MONOTONIC, when the first signal came

// timeout(1) signals its command and then its own process group, so the
// command gets the one stop twice within microseconds; so may a launcher.
// Signals this close together are one interrupt, not "Ctrl-C again": a
// person pressing twice is slower than this.
constexpr long long kOneInterruptNs = 100'000'000;

long long monotonic_ns() {  // clock_gettime is async-signal-safe
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long long>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// RemovedOnForcedExit's paths. A slot is free (0), claimed (1) or armed (2);
// its version is odd while its path is being written. The handler copies an
// armed path and unlinks the copy only if the version did not move meanwhile
// (a seqlock): another thread may release and refill the slot at any time.
// Once the handler has begun (g_forced_exit), no guard is released any more:
// its owner would remove or rename the file, and the handler must not then
// unlink a name that means something else.
constexpr int kScratchSlots = 8;
constexpr std::size_t kScratchPathMax = 4096;
struct ScratchSlot {
  std::atomic<int> state{0};
  std::atomic<unsigned> version{0};
  std::atomic<char> path[kScratchPathMax];  // atomics: the handler may read while a thread writes
};
ScratchSlot g_scratch[kScratchSlots];
std::atomic<bool> g_forced_exit{false};
std::atomic<bool> g_exit_at_once{false};  // a command with nothing to save

void unlink_armed_scratch_files() {
  char copy[kScratchPathMax];
  for (ScratchSlot& slot : g_scratch) {
    // A slot being written right now is retried a few times, not skipped.
    for (int attempt = 0; attempt < 100; ++attempt) {
      const unsigned before = slot.version.load(std::memory_order_acquire);
      if ((before & 1u) != 0) continue;
      // seq_cst, as the destructor's store and flag check: if it did not see
      // g_forced_exit, this sees the slot released.
      if (slot.state.load() != 2) break;
      std::size_t i = 0;
      for (; i + 1 < kScratchPathMax; ++i) {
        copy[i] = slot.path[i].load(std::memory_order_relaxed);
        if (copy[i] == '\0') break;
      }
      copy[i] = '\0';
      std::atomic_thread_fence(std::memory_order_acquire);
      if (slot.version.load(std::memory_order_relaxed) != before) continue;
      unlink(copy);
      break;
    }
  }
}

// SIGTERM to the child's group, up to kSecondTermGraceSeconds for it to end
// (its own forced exit removes its scratch files), then SIGKILL. Only
// async-signal-safe calls: kill, waitpid, nanosleep.
void stop_child_group(int group) {
  kill(-group, SIGTERM);
  const timespec step{0, 20'000'000};
  for (int waited = 0; waited < static_cast<int>(kSecondTermGraceSeconds * 50); ++waited) {
    waitpid(group, nullptr, WNOHANG);  // a dead leader must not keep the group "alive" as a zombie
    if (kill(-group, 0) != 0 && errno == ESRCH) return;
    nanosleep(&step, nullptr);
  }
  kill(-group, SIGKILL);
}

extern "C" void on_interrupt(int sig) {
  const long long now = monotonic_ns();
  long long none = 0;
  g_first_signal_ns.compare_exchange_strong(none, now);  // before g_signal, so a nested signal sees it
  int none_yet = 0;
  const bool again = !g_signal.compare_exchange_strong(none_yet, sig);  // the first signal stays the run's
  if (again && now - g_first_signal_ns.load() < kOneInterruptNs) return;
  if (again || g_exit_at_once.load()) {
    // Second signal, or a command with nothing to save: the user wants out
    // now, and the running child (which may hold GPU memory) goes with us.
    // unlink is async-signal-safe.
    g_forced_exit.store(true);
    if (const int group = g_child_group.load(); group > 0) stop_child_group(group);
    unlink_armed_scratch_files();
    _exit(128 + sig);
  }
  if (!g_announce.load()) return;
  static const char msg[] = "\ninterrupted: saving what was measured so far (Ctrl-C again to quit at once)\n";
  [[maybe_unused]] auto n = write(STDERR_FILENO, msg, sizeof msg - 1);
}

}  // namespace

void install_exit_on_interrupt() {
  g_exit_at_once.store(true);
  install_interrupt_handlers(InterruptNotice::quiet);
}

void install_interrupt_handlers(InterruptNotice notice) {
  g_announce.store(notice == InterruptNotice::announce);
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  // One handler at a time: a SIGTERM landing inside the SIGINT handler
  // would otherwise take the first signal's place.
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sa.sa_flags = 0;  // no SA_RESTART: blocking waits wake up and see the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // A closed stdout (| head) must not kill us before the files are written.
  signal(SIGPIPE, SIG_IGN);
}

void set_running_child_group(int process_group) { g_child_group.store(process_group); }

bool interrupted() { return g_signal.load() != 0; }
int interrupt_signal() { return g_signal.load(); }
void set_interrupted_for_testing(bool value) {
  g_signal.store(value ? SIGINT : 0);
  g_first_signal_ns.store(0);
}

RemovedOnForcedExit::RemovedOnForcedExit(const char* path) {
  const std::size_t length = std::strlen(path);
  if (length >= kScratchPathMax) return;
  for (int i = 0; i < kScratchSlots; ++i) {
    ScratchSlot& slot = g_scratch[i];
    int expected = 0;
    if (!slot.state.compare_exchange_strong(expected, 1)) continue;
    slot.version.fetch_add(1, std::memory_order_relaxed);  // odd: being written
    std::atomic_thread_fence(std::memory_order_release);
    for (std::size_t c = 0; c <= length; ++c) slot.path[c].store(path[c], std::memory_order_relaxed);
    slot.version.fetch_add(1, std::memory_order_release);  // even: stable
    slot.state.store(2, std::memory_order_release);
    slot_ = i;
    return;
  }
}

RemovedOnForcedExit::~RemovedOnForcedExit() {
  if (slot_ < 0) return;
  ScratchSlot& slot = g_scratch[slot_];
  slot.state.store(1);
  // The handler has begun: it will unlink this path and end the process;
  // going on would let the owner reuse the name first.
  while (g_forced_exit.load()) pause();
  slot.version.fetch_add(2, std::memory_order_release);  // a copy taken before this is stale
  slot.state.store(0, std::memory_order_release);
}

}  // namespace redline
