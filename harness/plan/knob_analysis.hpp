// What dominates a projected run, and what moving one knob would change: the
// same projection (harness/plan/projection) on inputs with one thing moved,
// so a knob's effect is never a second formula.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/plan/projection.hpp"

namespace redline {

// Shares of the total: compute, the exposed all-reduce, checkpoints and
// failures (the Young/Daly overhead); `dominant` names the largest.
struct TimeShares {
  double compute_pct = 0, exposed_pct = 0, checkpoint_pct = 0;
  std::string dominant;
};
TimeShares time_shares(const Projection& p);

struct KnobInputs {
  Figure recommended_mbs;   // the sweep's recommended micro-batch; unknown: none
  Figure pass_busbw_GBps;   // the all-reduce acceptance threshold (--expect-busbw); unknown: none
};

struct Alternative {
  std::string scenario;  // dp_doubled, recommended_mbs, busbw_at_pass, async_checkpoint
  std::string change;    // what moved, in words
  std::optional<Projection> projection;
  std::string why_not;   // when there is no projection
};

// In order: DP doubled (the same GBS, so GA or else the micro-batch falls as
// the accumulation rule has it; the job MTBF halved: failures scale with
// GPUs), the recommended micro-batch at its measured step time, busbw at the
// acceptance threshold, the async save's checkpoint advice.
std::vector<Alternative> knob_alternatives(const PlanInputs& in, const KnobInputs& knobs);

}  // namespace redline
