#include "collectives/rank_signals.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "harness/core/interrupt.hpp"

namespace redline {
namespace {

std::atomic<int> g_signal{0};

extern "C" void on_signal_silently(int sig) {
  if (g_signal.exchange(sig) != 0) _exit(128 + sig);  // the second one: out now
}

}  // namespace

void take_signals_silently() {
  struct sigaction sa {};
  sa.sa_handler = on_signal_silently;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking waits wake up and see the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool rank_interrupted() { return g_signal.load() != 0 || interrupted(); }

int rank_interrupt_signal() {
  const int sig = g_signal.load();
  return sig != 0 ? sig : interrupt_signal();
}

}  // namespace redline
