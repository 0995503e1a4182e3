// Gradient accumulation from GBS = MBS x GA x DP: how a global batch splits
// into micro-batches (MBS, at most the recommended batch and at most GBS / DP)
// accumulated over GA whole steps on each of DP data-parallel ranks. Data
// parallelism runs side by side and accumulation one step after another, so
// every rank takes a share and the plan takes the fewest steps. When no whole
// plan gives the global batch exactly, the nearest achievable ones below and
// above are given instead, in at most kNearestExtraSteps more steps than the
// fewest that reach it. The rule: docs/batch_sweep.md, "Gradient accumulation
// plan".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace redline {

// The largest batch (global or micro) and data-parallel degree a tool takes.
// No real run comes near them, and they keep every product of a plan (GBS,
// the nearest plan above, a doubled DP) far from int64 overflow and the
// divisor search, O(sqrt(GBS / DP)), at a millisecond.
inline constexpr std::int64_t kMaxBatch = std::int64_t{1} << 40;
inline constexpr std::int64_t kMaxDataParallel = std::int64_t{1} << 20;

// When G is not a multiple of DP, the nearest plans take at most this many
// steps more than the fewest any plan reaching G needs (ceil(G / (DP x cap))).
// The multiples of DP next to G may have no divisor near the cap (34 = 2 x 17:
// GA 17 where 3 steps reach 100 on 3 ranks). In the fewest steps N there is
// always a plan within N samples per rank of G / DP on each side; one step
// more often finds a nearer one (33 = 11 x 3 per rank beside 32 x 1 with MBS up to 32).
inline constexpr std::int64_t kNearestExtraSteps = 1;

// One whole plan: global_batch = micro_batch x accumulation_steps x data_parallel.
struct BatchPlan {
  std::int64_t global_batch = 0;
  std::int64_t micro_batch = 0;
  std::int64_t accumulation_steps = 0;
  std::int64_t data_parallel = 0;
};

struct AccumulationPlan {
  std::int64_t global_batch = 0;     // what was asked
  std::int64_t data_parallel = 0;
  std::int64_t max_micro_batch = 0;  // the recommended batch
  // The asked global batch in the fewest steps; empty when it is not a
  // multiple of the data-parallel degree.
  std::optional<BatchPlan> exact;
  // The nearest achievable global batches below and above the one asked,
  // each in its fewest steps: when there is no exact plan (the nearest in at
  // most kNearestExtraSteps more steps than micro-batches of max_micro_batch
  // need to reach it), or when the exact one takes more steps than such
  // micro-batches would (then the nearest in that smallest number of steps).
  std::optional<BatchPlan> below, above;
  std::string explanation;  // one line for the summary
};

// Throws UsageError when the global batch is smaller than the data-parallel
// degree, std::invalid_argument for a micro-batch or degree below 1 or a
// global batch above kMaxBatch (callers refuse those first). Any micro-batch
// cap of at least 1 works.
AccumulationPlan plan_accumulation(std::int64_t global_batch, std::int64_t data_parallel,
                                   std::int64_t max_micro_batch);

// "GBS 512 = MBS 16 x GA 4 x DP 8".
std::string plan_text(const BatchPlan& plan);

}  // namespace redline
