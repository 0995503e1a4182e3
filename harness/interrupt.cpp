#include "harness/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace redline {
namespace {

std::atomic<int> g_signal{0};
std::atomic<int> g_child_group{0};

// RemovedOnForcedExit's paths: a slot is free (0), being filled (1) or armed
// (2); the handler only reads armed ones, so it never sees half a path.
constexpr int kScratchSlots = 8;
constexpr std::size_t kScratchPathMax = 4096;
std::atomic<int> g_scratch_state[kScratchSlots];
char g_scratch_path[kScratchSlots][kScratchPathMax];

extern "C" void on_interrupt(int sig) {
  if (g_signal.exchange(sig) != 0) {
    // Second signal: the user really wants out now, and the running child
    // (which may hold GPU memory) goes with us. unlink is async-signal-safe.
    if (const int group = g_child_group.load(); group > 0) kill(-group, SIGKILL);
    for (int i = 0; i < kScratchSlots; ++i)
      if (g_scratch_state[i].load(std::memory_order_acquire) == 2) unlink(g_scratch_path[i]);
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
    int expected = 0;
    if (!g_scratch_state[i].compare_exchange_strong(expected, 1)) continue;
    std::strcpy(g_scratch_path[i], path);
    g_scratch_state[i].store(2, std::memory_order_release);
    slot_ = i;
    return;
  }
}

RemovedOnForcedExit::~RemovedOnForcedExit() {
  if (slot_ >= 0) g_scratch_state[slot_].store(0, std::memory_order_release);
}

}  // namespace redline
