#include "harness/batch/accumulation.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline {

AccumulationPlan plan_accumulation(std::int64_t global_batch, std::int64_t data_parallel, std::int64_t micro_batch) {
  if (micro_batch < 1 || data_parallel < 1)
    throw std::invalid_argument("plan_accumulation: micro-batch and data-parallel degree must be at least 1");
  if (global_batch < data_parallel)
    throw UsageError("--global-batch", std::to_string(global_batch),
                     "must be at least --data-parallel (" + std::to_string(data_parallel) +
                         "): every rank needs a sample");
  AccumulationPlan plan;
  plan.micro_batch = micro_batch;
  plan.data_parallel = data_parallel;
  plan.global_batch = global_batch;
  const std::int64_t per_step = micro_batch * data_parallel;
  plan.accumulation_steps =
      std::max<std::int64_t>(1, std::llround(static_cast<double>(global_batch) / static_cast<double>(per_step)));
  plan.effective_global_batch = per_step * plan.accumulation_steps;
  plan.exact = plan.effective_global_batch == global_batch;

  const std::string formula = "MBS " + std::to_string(micro_batch) + " x GA " +
                              std::to_string(plan.accumulation_steps) + " x DP " + std::to_string(data_parallel);
  if (plan.exact) {
    plan.explanation = "GBS " + std::to_string(global_batch) + " = " + formula;
    return plan;
  }
  if (global_batch % data_parallel == 0) {
    const std::int64_t per_rank = global_batch / data_parallel;
    for (std::int64_t m = std::min(micro_batch, per_rank); m >= 1; --m)
      if (per_rank % m == 0) {
        plan.exact_micro_batch = m;
        break;
      }
  }
  const double off = 100.0 * static_cast<double>(plan.effective_global_batch - global_batch) /
                     static_cast<double>(global_batch);
  plan.explanation = "GBS " + std::to_string(global_batch) + " / (MBS " + std::to_string(micro_batch) + " x DP " +
                     std::to_string(data_parallel) + ") is not whole; " + formula + " gives GBS " +
                     std::to_string(plan.effective_global_batch) + " (" + (off > 0 ? "+" : "") +
                     format_number(off, 1) + "%)";
  if (plan.exact_micro_batch)
    plan.explanation += "; for exactly " + std::to_string(global_batch) + " use MBS " +
                        std::to_string(*plan.exact_micro_batch) + " x GA " +
                        std::to_string(global_batch / data_parallel / *plan.exact_micro_batch);
  else
    plan.explanation += "; no micro-batch gives exactly " + std::to_string(global_batch) + ": it is not a multiple of DP " +
                        std::to_string(data_parallel);
  return plan;
}

}  // namespace redline
