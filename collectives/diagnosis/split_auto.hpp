// --split auto on the ranks: runs the rounds split_diagnosis.hpp plans, one
// communicator split per round, and prints each round's groups and busbw,
// the evidence for every name, and how many rounds it took (rank 0). Ranks
// whose nodes sit a round out wait without spinning. The same code for every
// backend (NCCL, host).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/sweep/collective_sweep.hpp"

namespace redline {

struct SplitAutoResult {
  std::uint64_t wrong = 0;
  bool named = false;        // a node or link was named: the check failed
  bool interrupted = false;  // Ctrl-C on any rank
};

// Every rank calls this. It measures options.collectives.front() with the
// first type and op, out of place, at every size. Throws UsageError (the same
// on every rank) when the nodes hold different numbers of ranks.
SplitAutoResult run_split_auto(const CollectiveSweepOptions& options, SweepServices& services);

}  // namespace redline
