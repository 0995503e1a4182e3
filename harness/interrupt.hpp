// Ctrl-C handling: the first SIGINT/SIGTERM only raises a flag, so the running
// loop stops at the next point and the points measured so far are saved and
// printed. A second Ctrl-C exits at once.
#pragma once

namespace redline {

// Installs the handlers (idempotent).
void install_interrupt_handlers();
// True once SIGINT or SIGTERM has arrived.
bool interrupted();
// The signal that arrived (0 if none), for the exit status 128+signal.
int interrupt_signal();
// The process group of the child being run (0: none), killed on a second
// Ctrl-C so it does not outlive us.
void set_running_child_group(int process_group);
// For tests: raise or clear the flag without a signal.
void set_interrupted_for_testing(bool value);

}  // namespace redline
