// The named places of a run where a test can make a rank misbehave: every
// rank calls these hooks as it passes them, and the default does nothing.
// The tool's hidden --inject-* flags install InjectedFaults
// (injected_faults.hpp) instead, so the fault paths (a slow, hung, dead,
// frozen or wrong rank, a stuck abort) are tested on real processes while
// production code holds no test-only branches.
#pragma once

#include <cstddef>

#include "collectives/ops/data_type.hpp"

namespace redline {

// The points every rank passes, in order, under the watchdog, before the
// measured sizes.
enum class RunStage { init, split, warmup };

class FaultHooks {
 public:
  virtual ~FaultHooks() = default;
  // This rank is about to reach `stage`: communicator init, the --split
  // split, a series' warm-up pass.
  virtual void before_stage(RunStage) {}
  // This rank is about to measure the size `bytes` (the table's size
  // column), out of place and then in place.
  virtual void before_point(std::size_t /*bytes*/) {}
  // This rank measured the size `bytes` out of place and is about to measure
  // it in place.
  virtual void before_in_place(std::size_t /*bytes*/) {}
  // Right before each timed operation of this rank (and each operation of the
  // --per-rank arrival pass).
  virtual void before_timed_operation() {}
  // This rank's input for a check has been written to `host` (`count`
  // elements of `type`), before it is sent.
  virtual void after_check_input(void* /*host*/, std::size_t /*count*/, DataType /*type*/) {}
  // The watchdog is about to abort the communicators.
  virtual void before_abort() {}
};

// The hooks of a run without injected faults: they do nothing.
FaultHooks& no_faults();

}  // namespace redline
