#include "harness/plan/plan_report.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness/core/units.hpp"
#include "harness/measure/young_daly.hpp"
#include "harness/report/console_table.hpp"

namespace redline {
namespace {

Row scenario_row(const std::string& scenario, const Projection& p, double base_total_s) {
  Row row;
  row.param("scenario", scenario).param("gbs", std::to_string(p.plan.global_batch));
  row.param("mbs", std::to_string(p.plan.micro_batch)).param("ga", std::to_string(p.plan.accumulation_steps));
  row.param("dp", std::to_string(p.plan.data_parallel));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  row.metric("micro_step_ms", p.step_time_ms.value).metric("busbw_used_GBps", p.busbw_GBps);
  row.metric("compute_s", p.step.compute_s).metric("allreduce_s", p.step.allreduce_s);
  row.metric("exposed_allreduce_s", p.step.exposed_s).metric("opt_step_time_s", p.step.total_s);
  row.metric("optimizer_steps", static_cast<double>(p.optimizer_steps)).metric("train_h", p.train_s / 3600);
  row.metric("ckpt_interval_s", p.checkpoint ? p.checkpoint->interval_s : nan);
  row.metric("ckpt_overhead_pct", p.checkpoint ? p.checkpoint->overhead_pct : nan);
  row.metric("total_h", p.total_s / 3600).metric("gpu_hours", p.gpu_hours);
  row.metric("change_pct", 100.0 * (p.total_s / base_total_s - 1.0));
  return row;
}

// Seconds to the millisecond: a step's parts are summed by eye.
std::string seconds(double s) { return format_number(s, 3) + " s"; }

// A count or size without an exponent: 1024000, 14000000000.
std::string whole(double v) { return v == std::floor(v) ? format_number(v, 0) : format_number(v, 2); }

std::string checkpoint_costs_text(const CheckpointCosts& c) {
  std::string text = "stall " + seconds(c.stall_s.value) + " (" + c.stall_s.source + "), restore " +
                     seconds(c.restore_s.value) + " (" + c.restore_s.source + "), MTBF " +
                     human_number(c.mtbf_s.value / 3600) + " h (" + c.mtbf_s.source + ")";
  if (c.has_async())
    text += "; async snapshot " + seconds(c.snapshot_s.value) + " (" + c.snapshot_s.source + "), persist " +
            seconds(c.persist_s.value) + " (" + c.persist_s.source + ")";
  return text;
}

void add_inputs(const PlanInputs& in, const Projection& p, SummaryLines& s) {
  s.emplace_back("step_time", human_number(p.step_time_ms.value) + " ms per micro-batch step at MBS " +
                                  std::to_string(p.plan.micro_batch) + " (" + p.step_time_ms.source + ")");
  s.emplace_back("run_size", whole(in.samples.value) + " samples (" + in.samples.source + ")");
  s.emplace_back("gradients", whole(in.grad_bytes.value) + " bytes (" + in.grad_bytes.source + ")");
  s.emplace_back("busbw", format_number(in.busbw_GBps.value, 3) + " GB/s at the " +
                              format_size(static_cast<std::uint64_t>(std::min(in.bucket_bytes, in.grad_bytes.value))) +
                              " all-reduce message (" + in.busbw_GBps.source + ")");
  s.emplace_back("overlap", format_number(in.overlap, 2) + " of the backward, which is " +
                                format_number(in.backward_share, 3) + " of the step; bucket " +
                                format_size(static_cast<std::uint64_t>(in.bucket_bytes)));
  if (in.checkpoint) s.emplace_back("checkpoint_costs", checkpoint_costs_text(*in.checkpoint));
}

void add_step(const PlanInputs& in, const Projection& p, SummaryLines& s) {
  const auto& st = p.step;
  const std::int64_t d = p.plan.data_parallel;
  if (!in.batch_source.empty()) s.emplace_back("batch", in.batch_source);
  s.emplace_back("plan", p.accumulation.explanation + " (harness/measure/accumulation)");
  s.emplace_back("compute", seconds(st.compute_s) + " = GA " + std::to_string(p.plan.accumulation_steps) + " x " +
                                human_number(p.step_time_ms.value) + " ms");
  s.emplace_back("all_reduce", seconds(st.allreduce_s) + " = " + whole(in.grad_bytes.value) + " B x 2(" +
                                   std::to_string(d) + "-1)/" + std::to_string(d) + " / " +
                                   format_number(in.busbw_GBps.value, 3) + " GB/s");
  s.emplace_back("exposed", seconds(st.exposed_s) +
                                (in.overlap > 0 ? " = max(all-reduce - " + format_number(in.overlap, 2) + " x " +
                                                      format_number(in.backward_share, 3) + " x step time, last bucket " +
                                                      seconds(st.last_bucket_s) + ")"
                                                : " (no overlap: all of it)"));
  s.emplace_back("optimizer_step", seconds(st.total_s) + " = compute + exposed");
  s.emplace_back("optimizer_steps", std::to_string(p.optimizer_steps) + " = ceil(" + whole(in.samples.value) +
                                        " samples / GBS " + std::to_string(p.plan.global_batch) + ")");
  s.emplace_back("train_time", duration_text(p.train_s) + " = " + std::to_string(p.optimizer_steps) + " x " +
                                   seconds(st.total_s) + ", before checkpoints");
}

void add_total(const PlanInputs& in, const Projection& p, SummaryLines& s) {
  if (p.checkpoint) {
    const auto& c = *p.checkpoint;
    // What must stay small against the MTBF: the stall, or the async persist.
    const CheckpointCosts& k = *in.checkpoint;
    const double longest = in.async_checkpoint ? std::max(k.snapshot_s.value, k.persist_s.value) : k.stall_s.value;
    const std::string caveat = young_daly_caveat(c, longest, k.mtbf_s.value);
    s.emplace_back("checkpoint", std::string(in.async_checkpoint ? "async" : "sync") + " every " +
                                     seconds(c.interval_s) + " (Young/Daly), overhead " +
                                     format_number(c.overhead_pct, 2) + "%, lost per failure " + seconds(c.lost_work_s) +
                                     (caveat.empty() ? "" : " (" + caveat + ")"));
  } else {
    s.emplace_back("checkpoint", "not included: give --ckpt-stall, --restore and --mtbf, or --checkpoint");
  }
  s.emplace_back("total", duration_text(p.total_s) + ", " + format_number(p.gpu_hours, 1) + " GPU-hours (DP " +
                              std::to_string(p.plan.data_parallel) + " GPUs)");
  const TimeShares t = time_shares(p);
  s.emplace_back("dominant", t.dominant + " (of the total: compute " + format_number(t.compute_pct, 1) +
                                 "%, exposed all-reduce " + format_number(t.exposed_pct, 1) +
                                 "%, checkpoints and failures " + format_number(t.checkpoint_pct, 1) + "%)");
}

// A projection's micro-step not measured at its MBS, said where its figures are.
std::string scaled_step_note(const Projection& p) {
  if (!p.step_time_scaled) return "";
  return "micro-step " + human_number(p.step_time_ms.value) + " ms scaled to MBS " +
         std::to_string(p.plan.micro_batch) + " at constant samples/s, a lower bound";
}

std::string alternative_text(const Alternative& a, const Projection& plan) {
  if (!a.projection) return (a.change.empty() ? "" : a.change + ": ") + "not projected: " + a.why_not;
  const Projection& p = *a.projection;
  const double change = 100.0 * (p.total_s / plan.total_s - 1.0);
  const std::string scaled = scaled_step_note(p);
  return a.change + ": " + plan_text(p.plan) + ", step " + seconds(p.step.total_s) +
         (scaled.empty() ? "" : " (" + scaled + ")") + ", total " + duration_text(p.total_s) + " (" +
         (change > 0 ? "+" : "") + format_number(change, 1) + "%), " + format_number(p.gpu_hours, 1) + " GPU-hours";
}

}  // namespace

std::string duration_text(double s) { return format_number(s, 0) + " s (" + format_number(s / 3600, 3) + " h)"; }

std::vector<Row> plan_rows(const Projection& plan, const std::vector<Alternative>& alternatives) {
  std::vector<Row> rows{scenario_row("plan", plan, plan.total_s)};
  rows.back().note = scaled_step_note(plan);
  for (const auto& a : alternatives) {
    if (a.projection) {
      rows.push_back(scenario_row(a.scenario, *a.projection, plan.total_s));
      const std::string scaled = scaled_step_note(*a.projection);
      rows.back().note = a.change + (scaled.empty() ? "" : "; " + scaled);
    } else {
      Row row;
      row.param("scenario", a.scenario);
      row.status = RowStatus::skipped;
      row.note = a.why_not;
      rows.push_back(row);
    }
  }
  return rows;
}

SummaryLines plan_summary(const PlanInputs& in, const Projection& plan, const std::vector<Alternative>& alternatives) {
  SummaryLines s;
  add_inputs(in, plan, s);
  add_step(in, plan, s);
  add_total(in, plan, s);
  for (const auto& a : alternatives) s.emplace_back("knob " + a.scenario, alternative_text(a, plan));
  return s;
}

}  // namespace redline
