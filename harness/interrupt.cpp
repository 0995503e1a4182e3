#include "harness/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace redline {
namespace {

std::atomic<int> g_signal{0};
std::atomic<int> g_child_group{0};

extern "C" void on_interrupt(int sig) {
  if (g_signal.exchange(sig) != 0) {
    // Second signal: the user really wants out now, and the running child
    // (which may hold GPU memory) goes with us.
    if (const int group = g_child_group.load(); group > 0) kill(-group, SIGKILL);
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

}  // namespace redline
