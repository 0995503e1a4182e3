#include "harness/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace redline {
namespace {

std::atomic<int> g_signal{0};
std::atomic<int> g_child_group{0};

// RemovedOnForcedExit's paths. A slot is free (0), claimed (1) or armed (2);
// its version is odd while its path is being written. The handler copies an
// armed path and unlinks the copy only if the version did not move meanwhile
// (a seqlock): another thread may release and refill the slot at any time.
constexpr int kScratchSlots = 8;
constexpr std::size_t kScratchPathMax = 4096;
struct ScratchSlot {
  std::atomic<int> state{0};
  std::atomic<unsigned> version{0};
  char path[kScratchPathMax];
};
ScratchSlot g_scratch[kScratchSlots];

void unlink_armed_scratch_files() {
  char copy[kScratchPathMax];
  for (ScratchSlot& slot : g_scratch) {
    const unsigned before = slot.version.load(std::memory_order_acquire);
    if ((before & 1u) != 0 || slot.state.load(std::memory_order_acquire) != 2) continue;
    // A plain loop: memcpy is not on the async-signal-safe list.
    std::size_t i = 0;
    for (; i + 1 < kScratchPathMax && slot.path[i] != '\0'; ++i) copy[i] = slot.path[i];
    copy[i] = '\0';
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.version.load(std::memory_order_relaxed) != before || slot.state.load(std::memory_order_relaxed) != 2)
      continue;
    unlink(copy);
  }
}

extern "C" void on_interrupt(int sig) {
  if (g_signal.exchange(sig) != 0) {
    // Second signal: the user really wants out now, and the running child
    // (which may hold GPU memory) goes with us. unlink is async-signal-safe.
    if (const int group = g_child_group.load(); group > 0) kill(-group, SIGKILL);
    unlink_armed_scratch_files();
    _exit(128 + sig);
  }
  static const char msg[] = "\ninterrupted: saving what was measured so far (Ctrl-C again to quit at once)\n";
  [[maybe_unused]] auto n = write(STDERR_FILENO, msg, sizeof msg - 1);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking waits wake up and see the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // A closed stdout (| head) must not kill us before the files are written.
  signal(SIGPIPE, SIG_IGN);
}

void set_running_child_group(int process_group) { g_child_group.store(process_group); }

bool interrupted() { return g_signal.load() != 0; }
int interrupt_signal() { return g_signal.load(); }
void set_interrupted_for_testing(bool value) { g_signal.store(value ? SIGINT : 0); }

RemovedOnForcedExit::RemovedOnForcedExit(const char* path) {
  if (std::strlen(path) >= kScratchPathMax) return;
  for (int i = 0; i < kScratchSlots; ++i) {
    ScratchSlot& slot = g_scratch[i];
    int expected = 0;
    if (!slot.state.compare_exchange_strong(expected, 1)) continue;
    slot.version.fetch_add(1, std::memory_order_acq_rel);  // odd: being written
    std::strcpy(slot.path, path);
    slot.version.fetch_add(1, std::memory_order_release);  // even: stable
    slot.state.store(2, std::memory_order_release);
    slot_ = i;
    return;
  }
}

RemovedOnForcedExit::~RemovedOnForcedExit() {
  if (slot_ < 0) return;
  ScratchSlot& slot = g_scratch[slot_];
  slot.state.store(1, std::memory_order_release);
  slot.version.fetch_add(2, std::memory_order_release);  // a copy taken before this is stale
  slot.state.store(0, std::memory_order_release);
}

}  // namespace redline
