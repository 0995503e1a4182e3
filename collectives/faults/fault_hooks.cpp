#include "collectives/faults/fault_hooks.hpp"

namespace redline {

FaultHooks& no_faults() {
  static FaultHooks none;
  return none;
}

}  // namespace redline
