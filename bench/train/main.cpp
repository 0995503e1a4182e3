// train_step_bench: a real Llama-style transformer training step in CUDA C++,
// what activation checkpointing (recompute) costs, and the batch that fits.
//   memory  the memory model per recompute mode; no GPU needed
//   run     time training steps at one configuration (forward, backward,
//           optimizer; tokens/s, MFU, the GEMM/attention/elementwise split)
//   sweep   per recompute mode, the micro-batch sweep through the harness's
//           batch-sweep engine (one child process per trial), and the verdict
// This file is the command line only; each subcommand has its own file.
#include "bench/tool_columns.hpp"
#include "bench/train/subcommands.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/schema_document.hpp"
#include "harness/report/tool_main.hpp"

using namespace redline;
using namespace redline::train;

namespace {

CLI::App* add_memory(CLI::App& app, MemoryFlags& f) {
  CLI::App* memory = app.add_subcommand(
      "memory",
      "Per recompute mode: parameters, weight/gradient/master/optimizer bytes, activation bytes per layer and in all "
      "(beside Korthikanti's formula), the working set and workspaces, the predicted peak, and with --gpu-memory the "
      "largest micro-batch that fits. No GPU needed.");
  add_model_flags(*memory, f.model);
  add_mbs_flag(*memory, f.model);
  memory->add_option("--recompute", f.recompute, "none, selective, full or all (default)")->type_name("MODE");
  memory->add_option("--gpu-memory", f.gpu_memory, "GPU memory in GiB, for the largest micro-batch that fits")
      ->type_name("GiB");
  add_output_flags(*memory, f.output);
  return memory;
}

CLI::App* add_run(CLI::App& app, RunFlags& f) {
  CLI::App* run = app.add_subcommand(
      "run", "Train at one configuration: warm-up steps, then steps timed with CUDA events per phase; tokens/s, step "
             "time, model TFLOPS, MFU and HFU, the GEMM/attention/elementwise split, predicted beside measured memory.");
  add_model_flags(*run, f.model);
  add_mbs_flag(*run, f.model);
  run->add_option("--recompute", f.recompute, "none (default), selective or full")->type_name("MODE");
  run->add_option("--attention", f.attention, "cudnn (default) or unfused")->type_name("PATH");
  run->add_option("--steps", f.steps, "Timed optimizer steps (default 10)")->type_name("N");
  run->add_option("--warmup", f.warmup, "Untimed steps first (default 3)")->type_name("N");
  run->add_option("--ga", f.ga, "Micro-batches per optimizer step, gradients accumulated in fp32 (default 1)")
      ->type_name("N");
  run->add_option("--device", f.device, "CUDA device index (default 0)")->type_name("I");
  run->add_option("--gpu", f.gpu, "Datasheet for MFU: A100, H100, H200, B200 (default: the device's)")
      ->type_name("NAME");
  run->add_flag("--check", f.check, "Also check the loss falls over the steps (on the fixed batch)");
  run->add_flag("--no-split", f.no_split,
                "Leave out the kernel split (a step under CUPTI) and the GEMM and attention calls timed alone: "
                "tokens/s, MFU and memory only, as sweep's trials run");
  add_output_flags(*run, f.output);
  return run;
}

CLI::App* add_sweep(CLI::App& app, SweepFlags& f) {
  CLI::App* sweep = app.add_subcommand(
      "sweep", "Per recompute mode, the micro-batch sweep (one child process per trial, so an OOM never poisons the "
               "next): the largest batch that fits (bisected), the saturation batch, the best tokens/s, predicted "
               "beside measured memory; then the verdict.");
  add_model_flags(*sweep, f.model);
  sweep->add_option("--recompute", f.recompute, "none, selective, full or all (default)")->type_name("MODE");
  sweep->add_option("--attention", f.attention, "cudnn (default) or unfused")->type_name("PATH");
  sweep->add_option("--steps", f.steps, "Timed steps per trial (default 10)")->type_name("N");
  sweep->add_option("--warmup", f.warmup, "Untimed steps per trial (default 3)")->type_name("N");
  sweep->add_option("--max-mbs", f.max_mbs, "Largest micro-batch tried (default 1024)")->type_name("M");
  // Not in the help: taken only to say that sweep picks the micro-batch.
  sweep->add_option("--mbs", f.mbs)->group("");
  sweep->add_option("--device", f.device, "CUDA device index (default 0)")->type_name("I");
  sweep->add_option("--gpu", f.gpu, "Datasheet for MFU (default: the device's)")->type_name("NAME");
  sweep->add_option("--gpu-memory", f.gpu_memory,
                    "GPU memory in GiB: the memory model's largest fit is where each mode's bisection starts")
      ->type_name("GiB");
  add_output_flags(*sweep, f.output);
  return sweep;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A real transformer training step: recompute's cost and the batch that fits.", "train_step_bench"};
  app.footer(columns_help(tool_declaration("train_step_bench")));
  app.require_subcommand(1);
  install_interrupt_handlers();
  MemoryFlags memory_flags;
  RunFlags run_flags;
  SweepFlags sweep_flags;
  CLI::App* memory = add_memory(app, memory_flags);
  CLI::App* run = add_run(app, run_flags);
  CLI::App* sweep = add_sweep(app, sweep_flags);
  return run_tool(app, argc, argv, [&] {
    if (memory->parsed()) return run_memory(memory_flags);
    if (run->parsed()) return run_step(run_flags);
    if (sweep->parsed()) return run_sweep(sweep_flags, argv[0]);
    throw UsageError("give a subcommand: memory, run or sweep");
  });
}
