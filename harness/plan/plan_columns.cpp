#include "harness/plan/plan_columns.hpp"

namespace redline {

ColumnsDeclaration plan_columns() {
  return {
    .parameters =
      {{"scenario", "`plan`; then one knob moved: `dp_doubled`, `recommended_mbs`, `busbw_at_pass`, "
                    "`async_checkpoint` (a knob that cannot be projected is a `skipped` row with the reason)"},
       {"gbs", "the global batch, in samples"},
       {"mbs", "the micro-batch per GPU"},
       {"ga", "gradient-accumulation steps: gbs / (mbs x dp)"},
       {"dp", "data-parallel ranks"}},
    .metrics = {
      {.name = "micro_step_ms", .unit = "ms", .better = Better::lower,
       .meaning = "one micro-batch step (forward, backward, optimizer) at the row's MBS: `--step-time-ms`, or "
                 "a batch sweep CSV's `step_time_ms` at that batch, or scaled from the plan's MBS at constant "
                 "samples/s (a lower bound; the summary says which)"},
      {.name = "busbw_used_GBps", .unit = "GB/s", .better = Better::higher,
       .meaning = "the all-reduce bus bandwidth the row projects with: `--busbw`, or an all-reduce CSV's busbw "
                 "at min(bucket, gradient bytes), linear in log2(bytes) between the measured sizes around it"},
      {.name = "compute_s", .unit = "s", .better = Better::lower,
       .meaning = "compute per optimizer step: GA x micro_step_ms"},
      {.name = "allreduce_s", .unit = "s", .better = Better::lower,
       .meaning = "the gradient all-reduce per optimizer step: gradient bytes x 2(DP-1)/DP / busbw"},
      {.name = "exposed_allreduce_s", .unit = "s", .better = Better::lower,
       .meaning = "the part of it not hidden by the backward: all of it with `--overlap 0`, else "
                 "max(allreduce_s - overlap x backward share x step, the last bucket's all-reduce)"},
      {.name = "opt_step_time_s", .unit = "s", .better = Better::lower,
       .meaning = "one optimizer step: compute_s + exposed_allreduce_s"},
      {.name = "optimizer_steps", .unit = "count", .better = Better::lower,
       .meaning = "ceil(samples x epochs / GBS)"},
      {.name = "train_h", .unit = "h", .better = Better::lower,
       .meaning = "optimizer_steps x opt_step_time_s, before checkpoints and failures"},
      {.name = "ckpt_interval_s", .unit = "s", .better = Better::higher,
       .meaning = "Young/Daly interval (sync: sqrt(2 C MTBF); async: at least the persist time)"},
      {.name = "ckpt_overhead_pct", .unit = "%", .better = Better::lower,
       .meaning = "time lost to checkpoint stalls and failures: C/interval + lost per failure/MTBF (as "
                 "the checkpoint benchmark's `overhead_pct`)"},
      {.name = "total_h", .unit = "h", .better = Better::lower,
       .meaning = "train_h x (1 + ckpt_overhead_pct/100)"},
      {.name = "gpu_hours", .unit = "GPU-h", .better = Better::lower,
       .meaning = "total_h x DP"},
      {.name = "change_pct", .unit = "%", .better = Better::lower,
       .meaning = "the scenario's total_h against the plan's (negative: faster)"}
    }};
}

}  // namespace redline
