// How often to checkpoint, from measured costs: Young (1974) / Daly (2006).
// Here, below the tool rooms, because two tools apply it to what they
// measured or read (the checkpoint advice, redline plan's projection):
// one rule, one place. Pure arithmetic, all times in seconds.
#pragma once

#include <string>

namespace redline {

// First-order model:
//   interval  tau  = sqrt(2 C M)           C: checkpoint cost (the stall),
//                                          M: mean time between failures
//   lost per failure L = tau / 2 + R       (half an interval redone, plus
//                                          restore time R)
//   overhead       = C / tau + L / M       (stall share + share lost to
//                                          failures; R/M is constant, so
//                                          tau stays Young/Daly's optimum)
// The async save stalls only for its snapshot (C = snapshot time), but a new
// checkpoint cannot start before the previous one is durable, so
//   tau_async = max(sqrt(2 C_snap M), persist time P)
// and a failure during persist falls back one more checkpoint:
//   lost per failure L = tau / 2 + P + R, overhead = C_snap / tau + L / M.
// The MTBF range both tools take, in hours: 36 s (below it nothing useful
// runs between failures) to 10^7 h (about 1,100 years; beyond it the
// overhead is zero to every printed digit).
inline constexpr double kMinMtbfHours = 0.01, kMaxMtbfHours = 1e7;

struct CheckpointAdvice {
  double interval_s = 0;
  double overhead_pct = 0;
  double lost_work_s = 0;
};
CheckpointAdvice young_daly_advice(double cost_s, double mtbf_s, double restore_s);
CheckpointAdvice young_daly_async_advice(double snapshot_s, double persist_s, double mtbf_s, double restore_s);

// Where the first-order model stops describing the job, what to say (else
// ""): the overhead at 100% or more (no progress at all), or `longest_s` (the
// stall, or the async persist time) above a tenth of the MTBF, where
// Young/Daly's C << M no longer holds and the interval is a rough guide.
// The MTBF's 36 s floor alone does not ensure C << M: a 20 s save at 36 s
// read as an ok 105% overhead.
std::string young_daly_caveat(const CheckpointAdvice& advice, double longest_s, double mtbf_s);

}  // namespace redline
