// Test-only faults behind FaultHooks (fault_hooks.hpp), from the tool's
// hidden flags, so the fault paths run on real processes: a rank that is
// slow, never arrives, dies, stops on a real signal, sends a wrong element, or
// whose communicator abort never returns.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "collectives/faults/fault_hooks.hpp"

namespace redline {

// The hidden flags' text, as given (empty: not given).
struct FaultFlags {
  std::string delay;         // --inject-delay RANK:MS: sleeps MS before every timed operation
  std::string hang;          // --inject-hang RANK:BYTES[:in-place]|init|split|warmup: never reaches that point
  std::string exit;          // --inject-exit RANK:BYTES: exits (status 3) at the size of BYTES
  std::string signal;        // --inject-signal RANK:BYTES:STOP|KILL|INT|TERM: raises it on itself inside that size
  std::string wrong;         // --inject-wrong RANK: one wrong input element in every check
  bool stuck_abort = false;  // --inject-stuck-abort: the communicator abort never returns (every rank)
};

// What the flags ask for.
struct FaultPlan {
  int delay_rank = -1;
  double delay_ms = 0;
  int hang_rank = -1;
  std::size_t hang_bytes = 0;
  bool hang_in_place = false;          // at the in-place half of hang_bytes, after its out-of-place half
  std::optional<RunStage> hang_stage;  // instead of a size
  int exit_rank = -1;
  std::size_t exit_bytes = 0;
  int signal_rank = -1;
  std::size_t signal_bytes = 0;
  int signal = 0;
  int wrong_rank = -1;
  bool stuck_abort = false;
  bool any() const;
};

// Reads the flags; a malformed one is a UsageError naming it and its value.
FaultPlan parse_fault_flags(const FaultFlags& flags);

// The hooks that carry out `plan` on rank `rank`.
std::unique_ptr<FaultHooks> make_injected_faults(const FaultPlan& plan, int rank);

}  // namespace redline
