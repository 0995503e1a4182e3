#include "bench/plan/plan_flags.hpp"

#include "bench/tool_columns.hpp"
#include "harness/report/schema_document.hpp"
#include "harness/report/tool_main.hpp"

namespace redline::plan {

CLI::App* add_plan_subcommand(CLI::App& app, PlanFlags& f) {
  CLI::App* p = app.add_subcommand(
      "plan", "How long a training run takes from the suite's figures (step time, busbw, checkpoint costs), what "
              "dominates, and what one knob would change (docs/plan.md)");
  p->footer(columns_help(tool_declaration("redline_plan")));
  p->add_option("--from", f.from, "A suite run folder: take every figure it has (flags override)")->type_name("RUN_DIR");
  p->add_option("--step-time-ms", f.step_time_ms, "One micro-batch step (forward, backward, optimizer), ms")->type_name("T");
  p->add_option("--mbs", f.mbs, "Micro-batch size the step time is for")->type_name("M");
  p->add_option("--dp", f.dp, "Data-parallel degree (GPUs)")->type_name("D");
  p->add_option("--gbs", f.gbs, "Global batch: MBS x GA x DP, a multiple of --dp")->type_name("G");
  p->add_option("--samples", f.samples, "Samples per epoch")->type_name("N");
  p->add_option("--epochs", f.epochs, "Epochs (default 1)")->type_name("E");
  p->add_option("--tokens", f.tokens, "Tokens per epoch, instead of --samples (with --seq)")->type_name("N");
  p->add_option("--seq", f.seq, "Tokens per sample, with --tokens")->type_name("S");
  p->add_option("--grad-bytes", f.grad_bytes, "Gradient bytes all-reduced per optimizer step")->type_name("B");
  p->add_option("--params", f.params, "Parameters, instead of --grad-bytes (with --grad-dtype)")->type_name("P");
  p->add_option("--grad-dtype", f.grad_dtype, "bf16 (2 B, default) or fp32 (4 B) per parameter")->type_name("T");
  p->add_option("--busbw", f.busbw, "All-reduce bus bandwidth, GB/s (1e9 B/s)")->type_name("GBPS");
  p->add_option("--allreduce", f.allreduce_csv, "An all-reduce sweep's CSV: busbw at the bucket, interpolated")->type_name("CSV");
  p->add_option("--bucket-mb", f.bucket_mb, "DDP's gradient bucket, MiB as PyTorch's bucket_cap_mb (default 25)")->type_name("MB");
  p->add_option("--overlap", f.overlap, "Share of the backward that can hide the all-reduce, 0..1 (default 0)")->type_name("F");
  p->add_option("--backward-share", f.backward_share, "The backward's share of a step, 0..1 (default 2/3)")->type_name("F");
  p->add_option("--ckpt-stall", f.ckpt_stall, "Synchronous checkpoint stall, s")->type_name("S");
  p->add_option("--restore", f.restore, "Restore after a failure, s")->type_name("S");
  p->add_option("--mtbf", f.mtbf, "The job's mean time between failures, hours")->type_name("H");
  p->add_option("--async-snapshot", f.async_snapshot, "Async save's stall (the snapshot), s")->type_name("S");
  p->add_option("--async-persist", f.async_persist, "Async save's persist in the background, s")->type_name("S");
  p->add_option("--checkpoint", f.checkpoint_csv, "A checkpoint benchmark's CSV: stall, restore, async, MTBF")->type_name("CSV");
  p->add_option("--sweep", f.sweep_csv, "A batch sweep's CSV: step time per batch (and its JSON's recommendation)")->type_name("CSV");
  p->add_option("--recommended-mbs", f.recommended_mbs, "The recommended micro-batch, for the knob")->type_name("M");
  p->add_option("--expect-busbw", f.expect_busbw, "The all-reduce's PASS threshold, GB/s, for the knob")->type_name("GBPS");
  add_output_flags(*p, f.output);
  return p;
}

}  // namespace redline::plan
