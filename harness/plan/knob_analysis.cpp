#include "harness/plan/knob_analysis.hpp"

#include <algorithm>

#include "harness/core/units.hpp"

namespace redline {
namespace {

// "GA 8 -> 4", "MBS 8 -> 4": what the accumulation rule moved between two
// plans of one GBS (the micro-batch moves once GA is 1).
std::string plan_moves(const BatchPlan& from, const BatchPlan& to) {
  std::string moves;
  const auto move = [&](const char* name, std::int64_t a, std::int64_t b) {
    if (a != b) moves += (moves.empty() ? "" : ", ") + std::string(name) + " " + std::to_string(a) + " -> " + std::to_string(b);
  };
  move("MBS", from.micro_batch, to.micro_batch);
  move("GA", from.accumulation_steps, to.accumulation_steps);
  return moves;
}

Alternative dp_doubled(PlanInputs in) {
  const BatchPlan before = project(in).plan;
  Alternative a{"dp_doubled", "DP " + std::to_string(2 * in.data_parallel) + " (2x) at the same GBS", {}, ""};
  in.data_parallel *= 2;
  if (in.global_batch % in.data_parallel) {
    a.why_not = "GBS " + std::to_string(in.global_batch) + " is not a multiple of DP " + std::to_string(in.data_parallel);
    return a;
  }
  if (in.checkpoint) in.checkpoint->mtbf_s.value /= 2;  // twice the GPUs fail twice as often
  a.projection = project(in);
  if (const std::string moves = plan_moves(before, a.projection->plan); !moves.empty()) a.change += ", " + moves;
  return a;
}

Alternative recommended_mbs(PlanInputs in, const Figure& rec) {
  Alternative a{"recommended_mbs", "", {}, ""};
  if (!rec.known()) {
    a.why_not = "no recommended micro-batch (give --sweep or --from with a batch sweep, or --recommended-mbs)";
    return a;
  }
  const auto mbs = static_cast<std::int64_t>(rec.value);
  a.change = "MBS up to " + std::to_string(mbs) + " (" + rec.source + ") instead of " + std::to_string(in.micro_batch);
  if (mbs == in.micro_batch) {
    a.why_not = "the plan already uses the recommended micro-batch";
  } else if (!in.step_time_ms.count(mbs)) {
    a.why_not = "no step time measured at MBS " + std::to_string(mbs);
  } else {
    in.micro_batch = mbs;
    a.projection = project(in);
  }
  return a;
}

Alternative busbw_at_pass(PlanInputs in, const Figure& pass) {
  Alternative a{"busbw_at_pass", "", {}, ""};
  if (!pass.known()) {
    a.why_not = "no acceptance threshold (give --expect-busbw, the all-reduce's PASS figure)";
    return a;
  }
  a.change = "busbw " + format_number(pass.value, 2) + " GB/s (" + pass.source + ") instead of " +
             format_number(in.busbw_GBps.value, 2);
  in.busbw_GBps = pass;
  a.projection = project(in);
  return a;
}

Alternative async_checkpoint(PlanInputs in) {
  Alternative a{"async_checkpoint", "async checkpoint save instead of sync", {}, ""};
  if (!in.checkpoint) {
    a.why_not = "no checkpoint figures (give --ckpt-stall, --restore and --mtbf, or --checkpoint)";
  } else if (!in.checkpoint->has_async()) {
    a.why_not = "no async snapshot and persist times (give --async-snapshot and --async-persist, or --checkpoint)";
  } else {
    in.async_checkpoint = true;
    a.projection = project(in);
  }
  return a;
}

}  // namespace

TimeShares time_shares(const Projection& p) {
  TimeShares s;
  const double steps = static_cast<double>(p.optimizer_steps);
  s.compute_pct = 100.0 * steps * p.step.compute_s / p.total_s;
  s.exposed_pct = 100.0 * steps * p.step.exposed_s / p.total_s;
  s.checkpoint_pct = 100.0 * (p.total_s - p.train_s) / p.total_s;
  const double top = std::max({s.compute_pct, s.exposed_pct, s.checkpoint_pct});
  s.dominant = top == s.compute_pct ? "compute" : top == s.exposed_pct ? "the exposed all-reduce" : "checkpoints and failures";
  return s;
}

std::vector<Alternative> knob_alternatives(const PlanInputs& in, const KnobInputs& knobs) {
  return {dp_doubled(in), recommended_mbs(in, knobs.recommended_mbs), busbw_at_pass(in, knobs.pass_busbw_GBps),
          async_checkpoint(in)};
}

}  // namespace redline
