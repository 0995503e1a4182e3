// Ctrl-C handling: the first SIGINT/SIGTERM only raises a flag, so the running
// loop stops at the next point and the points measured so far are saved and
// printed. A second Ctrl-C exits at once; signals within 0.1 s of the first
// are the same interrupt (timeout(1) signals its command and then its
// process group, so the command gets one stop twice).
#pragma once

namespace redline {

// After a second SIGTERM ("quit now"), how long a child process group gets to
// remove its scratch files before SIGKILL.
inline constexpr double kSecondTermGraceSeconds = 1;

// Whether the first signal says "interrupted: saving what was measured so
// far" at once. A run of several ranks is quiet: a launcher passes a signal
// to every rank (mpirun forwards Ctrl-C as SIGTERM, and sends SIGTERM to the
// survivors when a rank dies), so each rank would say it, and also where
// nothing is saved; there, rank 0 says what it saves.
enum class InterruptNotice { announce, quiet };

// Installs the handlers (idempotent; a later call changes the notice).
void install_interrupt_handlers(InterruptNotice notice = InterruptNotice::announce);
// For commands that measure nothing (redline report, compare, history): the
// first SIGINT/SIGTERM quits at once, as a second does elsewhere (scratch
// files such as a report's temporary file removed, exit 128 + signal).
void install_exit_on_interrupt();
// True once SIGINT or SIGTERM has arrived.
bool interrupted();
// The signal that arrived (0 if none), for the exit status 128+signal.
int interrupt_signal();
// The process group of the child being run (0: none). A second Ctrl-C passes
// a SIGTERM on to it, gives it kSecondTermGraceSeconds, then SIGKILLs it, so
// it neither outlives us nor leaves its scratch files.
void set_running_child_group(int process_group);
// For tests: raise or clear the flag without a signal.
void set_interrupted_for_testing(bool value);

// A scratch file removed even when a second signal ends the process at once
// (no destructors run then): a state-sized file must not outlive a run
// stopped by Ctrl-C twice or a launcher's second SIGTERM. For as long as the
// object lives; at most 8 at a time (more are not armed, only removed by
// their owner).
class RemovedOnForcedExit {
 public:
  explicit RemovedOnForcedExit(const char* path);
  ~RemovedOnForcedExit();
  RemovedOnForcedExit(const RemovedOnForcedExit&) = delete;
  RemovedOnForcedExit& operator=(const RemovedOnForcedExit&) = delete;

 private:
  int slot_ = -1;
};

}  // namespace redline
