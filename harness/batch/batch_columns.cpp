#include "harness/batch/batch_columns.hpp"

namespace redline {

ColumnsDeclaration batch_trial_columns() {
  return {
    .parameters =
      {{"batch_size", "the batch size the trial ran (`{bs}` in the command)"},
       {"program", "the script or program the command runs (`train.py`, `fake_train`)"},
       {"config", "8 hex digits hashing the command with `{bs}`, `--steps` and the metric options, so two "
                  "configurations never share a case key"}},
    .metrics = {
      {.name = "step_time_ms", .unit = "ms", .better = Better::lower,
       .meaning = "one step at the row's batch, from the figure its throughput came from: a printed step time "
                 "(`--step-time-regex`, a trainer's step-time line; the median) or one over a printed it/s, "
                 "else batch / samples_per_s (a printed samples/s; for wall-time throughput, trial wall time "
                 "/ `--steps`, start-up included); empty when that figure is not in samples (tokens/s without "
                 "`--tokens-per-sample`, a `--metric-regex` into another column)"},
      {.name = "trial_time_s", .unit = "s", .better = Better::lower,
       .meaning = "wall time of the whole trial (child process start to exit)"},
      {.name = "gain_pct", .unit = "%", .better = Better::higher,
       .meaning = "throughput gain over the next smaller batch size that ran ok (median of repeats)"},
      {.name = "peak_mem_GiB", .unit = "GiB", .better = Better::lower, .tracked = true,
       .meaning = "peak device memory"},
      {.name = "peak_rss_MiB", .unit = "MiB", .better = Better::lower,
       .meaning = "peak resident host memory of the trial's process tree: the larger of the kernel's "
                 "high-water mark for the child and the descendants it waited for (wait4) and the summed RSS "
                 "of its process group, sampled every 0.1 s; on `oom` rows, what the trial reached before it "
                 "failed"}
    }};
}

ColumnsDeclaration batch_sweep_columns() {
  // The throughput first: the figure the sweep is for.
  ColumnsDeclaration columns{.metrics = {
      {.name = "samples_per_s", .unit = "samples/s", .better = Better::higher, .tracked = true,
       .meaning = "training throughput: from `--metric-regex` when given, otherwise batch x `--steps` / trial "
                 "wall time (start-up included)"},
      {.name = "*_per_s", .unit = "1/s", .better = Better::higher, .tracked = true,
       .meaning = "any throughput named by the user (tokens_per_s, images_per_s)",
       .where = "`--metric-name`"}}};
  add_columns(columns, batch_trial_columns());
  columns.chart = {{.x = {"batch_size"}, .metric = {"samples_per_s", "*_per_s"}}};
  columns.headlines = {
      {.figure = "best throughput", .metric = {"samples_per_s", "*_per_s"}, .from = HeadlineFrom::best},
      {.figure = "saturation batch", .metric = {"samples_per_s", "*_per_s"}, .from = HeadlineFrom::saturation}};
  columns.notes = {"`--metric-name NAME` renames `samples_per_s`; name it `<what>_per_s` (e.g. `tokens_per_s`) so "
                   "the `*_per_s` row applies."};
  return columns;
}

}  // namespace redline
