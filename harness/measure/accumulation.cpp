#include "harness/measure/accumulation.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline {
namespace {

// The per-rank share in the fewest steps: its largest divisor not above the
// micro-batch cap is the micro-batch.
BatchPlan fewest_steps(std::int64_t per_rank, std::int64_t data_parallel, std::int64_t max_micro_batch) {
  const std::int64_t cap = std::min(max_micro_batch, per_rank);
  std::int64_t micro = 1;
  for (std::int64_t d = 1; d <= per_rank / d; ++d) {
    if (per_rank % d) continue;
    if (d <= cap) micro = std::max(micro, d);
    if (per_rank / d <= cap) micro = std::max(micro, per_rank / d);
  }
  return {per_rank * data_parallel, micro, per_rank / micro, data_parallel};
}

// ceil(a / b) for a >= 0 and b >= 1, written so that a b near the int64 maximum cannot overflow.
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b ? 1 : 0); }

// The nearest shares per rank below and above G / D (which lies between
// per_rank and per_rank + 1) that micro-batches up to the cap reach in at most
// `max_steps` steps, each then in its fewest steps. `base` is the fewest steps
// that reach per_rank + 1; only k from base - 1 up can win: for smaller k, k x
// cap is below (base - 1) x cap, itself at most per_rank, and reaches nothing above.
std::pair<BatchPlan, BatchPlan> nearest_within(std::int64_t per_rank, std::int64_t data_parallel,
                                               std::int64_t max_micro_batch, std::int64_t base,
                                               std::int64_t max_steps) {
  std::int64_t low = 0, high = 0;
  for (std::int64_t k = std::max<std::int64_t>(1, base - 1); k <= max_steps; ++k) {
    const std::int64_t down = std::min(max_micro_batch, per_rank / k);
    if (down >= 1) low = std::max(low, down * k);
    const std::int64_t up = ceil_div(per_rank + 1, k);
    if (up <= max_micro_batch && (high == 0 || up * k < high)) high = up * k;
  }
  return {fewest_steps(low, data_parallel, max_micro_batch), fewest_steps(high, data_parallel, max_micro_batch)};
}

std::string with_offset(const BatchPlan& plan, std::int64_t asked) {
  const double off = 100.0 * static_cast<double>(plan.global_batch - asked) / static_cast<double>(asked);
  return plan_text(plan) + " (" + (off > 0 ? "+" : "") + format_number(off, 1) + "%)";
}

std::string explain(const AccumulationPlan& p) {
  const std::string gbs = std::to_string(p.global_batch), dp = std::to_string(p.data_parallel);
  std::string text;
  if (p.exact) {
    text = plan_text(*p.exact);
    if (p.below)
      text += "; in " + std::to_string(p.below->accumulation_steps) + " steps (MBS up to " +
              std::to_string(p.max_micro_batch) + "): " + with_offset(*p.below, p.global_batch) + " or " +
              with_offset(*p.above, p.global_batch);
    return text;
  }
  return "no whole plan gives GBS " + gbs + " (not a multiple of DP " + dp + "); nearest: " +
         with_offset(*p.below, p.global_batch) + " or " + with_offset(*p.above, p.global_batch);
}

}  // namespace

std::string plan_text(const BatchPlan& plan) {
  return "GBS " + std::to_string(plan.global_batch) + " = MBS " + std::to_string(plan.micro_batch) + " x GA " +
         std::to_string(plan.accumulation_steps) + " x DP " + std::to_string(plan.data_parallel);
}

AccumulationPlan plan_accumulation(std::int64_t global_batch, std::int64_t data_parallel,
                                   std::int64_t max_micro_batch) {
  if (max_micro_batch < 1 || data_parallel < 1)
    throw std::invalid_argument("plan_accumulation: micro-batch and data-parallel degree must be at least 1");
  if (global_batch > kMaxBatch) throw std::invalid_argument("plan_accumulation: global batch above kMaxBatch");
  if (global_batch < data_parallel)
    throw UsageError("--global-batch", std::to_string(global_batch),
                     "must be at least --data-parallel (" + std::to_string(data_parallel) +
                         "): every rank needs a sample");
  AccumulationPlan plan;
  plan.global_batch = global_batch;
  plan.data_parallel = data_parallel;
  plan.max_micro_batch = max_micro_batch;
  const std::int64_t per_rank = global_batch / data_parallel;
  if (global_batch % data_parallel == 0) {
    plan.exact = fewest_steps(per_rank, data_parallel, max_micro_batch);
    // Micro-batches of the cap would take fewer steps, though not to exactly this GBS.
    const std::int64_t steps = ceil_div(per_rank, max_micro_batch);
    if (plan.exact->accumulation_steps > steps) {
      const std::int64_t low = per_rank / steps, high = (per_rank + steps - 1) / steps;
      plan.below = BatchPlan{low * steps * data_parallel, low, steps, data_parallel};
      plan.above = BatchPlan{high * steps * data_parallel, high, steps, data_parallel};
    }
  } else {
    // The multiples of DP next to G can take far more steps than G needs (34 per rank with MBS up
    // to 16 is 2 x 17: GA 17 where 3 steps reach it): the nearest within kNearestExtraSteps more.
    const std::int64_t base = ceil_div(per_rank + 1, max_micro_batch);
    const auto [low, high] = nearest_within(per_rank, data_parallel, max_micro_batch, base, base + kNearestExtraSteps);
    plan.below = low;
    plan.above = high;
  }
  plan.explanation = explain(plan);
  return plan;
}

}  // namespace redline
