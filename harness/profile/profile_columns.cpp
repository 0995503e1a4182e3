#include "harness/profile/profile_columns.hpp"

namespace redline {

ColumnsDeclaration profile_columns() {
  const char* step_rows = "`category=step` rows";
  const char* category_rows = "a category's rows";
  return {
      .parameters = {{"step", "the step's index among those found (0: the first; `--skip` steps are not written)"},
                     {"category", "`step` for the step's own row; else gemm, attention, nccl, elementwise (every other "
                                  "kernel: norms, activations, the optimizer), memcpy_h2d, memcpy_d2h, memcpy_d2d, "
                                  "memcpy_other, memset"}},
      .metrics = {{.name = "wall_ms", .unit = "ms", .better = Better::lower, .tracked = true,
                   .meaning = "the step's wall time, from its start to the next step's (NVTX range, output line or "
                              "the first kernel of the repeating sequence)",
                   .where = step_rows},
                  {.name = "busy_pct", .unit = "%", .better = Better::higher,
                   .meaning = "the share of the step some kernel, copy or memset ran (the union over streams)",
                   .where = step_rows},
                  {.name = "idle_pct", .unit = "%", .better = Better::lower,
                   .meaning = "100 - busy_pct: the GPU ran nothing", .where = step_rows},
                  {.name = "idle_before_ms", .unit = "ms", .better = Better::lower,
                   .meaning = "idle from the step's start to its first GPU record", .where = step_rows},
                  {.name = "idle_between_ms", .unit = "ms", .better = Better::lower,
                   .meaning = "idle between the step's GPU records (launch-bound when large)", .where = step_rows},
                  {.name = "idle_after_ms", .unit = "ms", .better = Better::lower,
                   .meaning = "idle from the step's last GPU record to its end", .where = step_rows},
                  {.name = "nccl_overlap_pct", .unit = "%", .better = Better::higher,
                   .meaning = "the share of NCCL's kernel time that compute kernels ran alongside (on other streams)",
                   .where = step_rows},
                  {.name = "time_ms", .unit = "ms", .better = Better::lower,
                   .meaning = "the category's summed GPU time in the step (concurrent records each count, as "
                              "torch.profiler sums them)",
                   .where = category_rows},
                  {.name = "share_pct", .unit = "%", .better = Better::lower,
                   .meaning = "time_ms / the step's wall time", .where = category_rows}},
      .chart = {{.x = {"step"}, .x_scale = AxisScale::linear, .metric = {"time_ms"}, .series = "category",
                 .saturation = false}},
      .notes = {"The summary holds what the rows do not: how the steps were found, the top kernels, each category "
                "against `--ceilings` and the largest gap (docs/profile.md)."}};
}

ColumnsDeclaration profiled_trial_columns() {
  const char* where = "`--profile`";
  return {.metrics = {{.name = "gpu_busy_pct", .unit = "%", .better = Better::higher,
                       .meaning = "the share of the trial's steps (the first skipped) some kernel, copy or memset ran; "
                                  "the top category and its share are in the note",
                       .where = where},
                      {.name = "gpu_idle_pct", .unit = "%", .better = Better::lower,
                       .meaning = "100 - gpu_busy_pct", .where = where},
                      {.name = "top_category_pct", .unit = "%", .better = Better::higher,
                       .meaning = "the category that took the most GPU time (named in the note) over the steps' wall time",
                       .where = where}}};
}

}  // namespace redline
