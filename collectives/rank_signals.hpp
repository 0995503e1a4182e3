// Ctrl-C in a run of several ranks. A launcher passes a signal to every rank
// (mpirun forwards Ctrl-C as SIGTERM, and sends SIGTERM to the survivors when
// a rank dies), so the harness's handler, which announces "interrupted:
// saving what was measured so far" at once, would say it once per rank, and
// also where nothing is saved. Here the first SIGINT or SIGTERM is only
// recorded: the next point's gather tells every rank, and rank 0 says what it
// saves. A second one ends the process at once, as the harness's does.
#pragma once

namespace redline {

// Replaces the harness's handlers for SIGINT and SIGTERM (call it after them).
void take_signals_silently();
// True once this rank got SIGINT or SIGTERM, through either handler.
bool rank_interrupted();
// That signal (for the exit status 128 + signal); 0 if none came.
int rank_interrupt_signal();

}  // namespace redline
