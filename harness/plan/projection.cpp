#include "harness/plan/projection.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "harness/core/units.hpp"

namespace redline {
namespace {

void check_inputs(const PlanInputs& in) {
  if (in.micro_batch < 1 || in.data_parallel < 1 || in.global_batch < 1)
    throw std::invalid_argument("plan: micro-batch, data parallelism and global batch must be at least 1");
  if (in.global_batch % in.data_parallel)
    throw std::invalid_argument("plan: the global batch must be a multiple of the data-parallel degree");
  if (!(in.samples.value > 0) || !(in.grad_bytes.value >= 0) || !(in.busbw_GBps.value > 0))
    throw std::invalid_argument("plan: samples and busbw must be positive, gradient bytes not negative");
  if (in.samples.value / static_cast<double>(in.global_batch) > kMaxOptimizerSteps)
    throw std::invalid_argument("plan: more than kMaxOptimizerSteps optimizer steps");
  if (!in.step_time_ms.count(in.micro_batch))
    throw std::invalid_argument("plan: no step time at the micro-batch");
}

// Young/Daly on the costs, sync or async as asked.
std::optional<CheckpointAdvice> checkpoint_advice(const PlanInputs& in) {
  if (!in.checkpoint) return std::nullopt;
  const CheckpointCosts& c = *in.checkpoint;
  if (in.async_checkpoint) {
    if (!c.has_async()) throw std::invalid_argument("plan: async checkpointing without its snapshot and persist times");
    return young_daly_async_advice(c.snapshot_s.value, c.persist_s.value, c.mtbf_s.value, c.restore_s.value);
  }
  return young_daly_advice(c.stall_s.value, c.mtbf_s.value, c.restore_s.value);
}

}  // namespace

double allreduce_bus_factor(std::int64_t ranks) {
  return ranks < 2 ? 0.0 : 2.0 * static_cast<double>(ranks - 1) / static_cast<double>(ranks);
}

StepBreakdown optimizer_step(double step_time_s, std::int64_t accumulation_steps, std::int64_t ranks,
                             const PlanInputs& in) {
  StepBreakdown s;
  const double seconds_per_byte = allreduce_bus_factor(ranks) / (in.busbw_GBps.value * 1e9);
  s.compute_s = static_cast<double>(accumulation_steps) * step_time_s;
  s.allreduce_s = in.grad_bytes.value * seconds_per_byte;
  // DDP all-reduces once per optimizer step, in buckets, during the backward
  // of the last micro-batch (the others run under no_sync). The bucket that
  // fills last is ready only when that backward ends, so it never hides.
  s.last_bucket_s = std::min(in.bucket_bytes, in.grad_bytes.value) * seconds_per_byte;
  const double window_s = in.overlap * in.backward_share * step_time_s;
  s.exposed_s = in.overlap > 0 ? std::max(s.allreduce_s - window_s, s.last_bucket_s) : s.allreduce_s;
  s.hidden_s = s.allreduce_s - s.exposed_s;
  s.total_s = s.compute_s + s.exposed_s;
  return s;
}

Figure step_time_at(const PlanInputs& in, std::int64_t micro_batch) {
  if (const auto it = in.step_time_ms.find(micro_batch); it != in.step_time_ms.end()) return it->second;
  const Figure& ref = in.step_time_ms.at(in.micro_batch);
  const double scaled = ref.value * static_cast<double>(micro_batch) / static_cast<double>(in.micro_batch);
  return {scaled, "scaled from " + format_number(ref.value, 3) + " ms at MBS " + std::to_string(in.micro_batch) +
                      " at constant samples/s, a lower bound (" + ref.source + ")"};
}

Projection project(const PlanInputs& in) {
  check_inputs(in);
  Projection p;
  p.accumulation = plan_accumulation(in.global_batch, in.data_parallel, in.micro_batch);
  p.plan = *p.accumulation.exact;
  p.step_time_ms = step_time_at(in, p.plan.micro_batch);
  p.step_time_scaled = !in.step_time_ms.count(p.plan.micro_batch);
  p.busbw_GBps = in.busbw_GBps.value;
  p.step = optimizer_step(p.step_time_ms.value / 1e3, p.plan.accumulation_steps, p.plan.data_parallel, in);
  p.optimizer_steps = static_cast<std::int64_t>(std::ceil(in.samples.value / static_cast<double>(p.plan.global_batch)));
  p.train_s = static_cast<double>(p.optimizer_steps) * p.step.total_s;
  p.checkpoint = checkpoint_advice(in);
  // First order, as the overhead itself: the share of time lost to stalls
  // and redone work, added on top of the failure-free run.
  p.total_s = p.train_s * (1.0 + (p.checkpoint ? p.checkpoint->overhead_pct / 100.0 : 0.0));
  p.gpu_hours = p.total_s / 3600.0 * static_cast<double>(p.plan.data_parallel);
  return p;
}

}  // namespace redline
