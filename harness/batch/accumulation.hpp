// Gradient accumulation from GBS = MBS x GA x DP: how many micro-batches each
// data-parallel rank accumulates to reach a global batch, and what rounding
// does when the numbers do not divide.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace redline {

struct AccumulationPlan {
  std::int64_t micro_batch = 0;
  std::int64_t accumulation_steps = 0;
  std::int64_t data_parallel = 0;
  std::int64_t global_batch = 0;          // what was asked
  std::int64_t effective_global_batch = 0;  // micro_batch x steps x data_parallel
  bool exact = false;
  // When inexact: the largest micro-batch <= the one given that divides exactly.
  std::optional<std::int64_t> exact_micro_batch;
  std::string explanation;  // one line for the summary
};

// Keeps `micro_batch` and picks the step count whose global batch is nearest
// to the one asked (at least 1 step). Throws UsageError when the global batch
// is smaller than the data-parallel degree.
AccumulationPlan plan_accumulation(std::int64_t global_batch, std::int64_t data_parallel, std::int64_t micro_batch);

}  // namespace redline
