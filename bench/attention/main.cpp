// attention_bench: attention head sizing. For a hidden size, which split into
// heads (and KV heads, under tensor parallelism) runs fastest, and why.
//   plan   the layouts, their constraints, fused-kernel support, FLOPs and
//          the model's predicted efficiency, ranked; no GPU needed
//   sweep  every layout measured on the GPU (unfused and cuDNN paths,
//          forward and backward, verified first), the attention block's
//          throughput, and the recommendation
// This file is the command line only; each subcommand has its own file.
#include <iostream>

#include "bench/attention/subcommands.hpp"
#include "bench/tool_columns.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/schema_document.hpp"
#include "harness/report/tool_main.hpp"

#if defined(REDLINE_HAVE_GBENCH_FLAGS)
#include "harness/report/gbench_args.hpp"
#endif

using namespace redline;
using namespace redline::attention;

namespace {

CLI::App* add_plan(CLI::App& app, PlanFlags& f) {
  CLI::App* plan = app.add_subcommand(
      "plan",
      "Every head layout of --hidden with its constraints, the fused kernels that run its head dim, its FLOPs and "
      "the model's predicted efficiency, ranked with the reason for each loss (no GPU needed).");
  add_layout_flags(*plan, f.layout, false);
  add_output_flags(*plan, f.output);
  return plan;
}

CLI::App* add_sweep(CLI::App& app, SweepFlags& f) {
  CLI::App* sweep = app.add_subcommand(
      "sweep",
      "Every layout measured on the GPU: time, TFLOPS and memory per path and direction (each case verified before "
      "it is timed), the attention block with its projections, the recommendation, and with a --batch axis the "
      "saturation.");
  add_layout_flags(*sweep, f.layout, true);
  sweep->add_option("--path", f.path, "unfused, cudnn, or both: unfused,cudnn or all (default)")->type_name("LIST");
  sweep->add_option("--direction", f.direction, "fwd, bwd or fwd,bwd (default)")->type_name("LIST");
  sweep->add_flag("--unfused-gemms", f.unfused_gemms,
                  "Also time each GEMM of the unfused path alone, verified, with the gemm_bench shape that runs it "
                  "(scripts/compare-attention-gemms reads them)");
  sweep->add_option("--device", f.device, "CUDA device index (default 0)")->type_name("I");
  add_policy_flags(*sweep, f.policy, "case");
  sweep->add_option("--first-warmup", f.first_warmup,
                    "Warm-up seconds of the first case, so clocks are up (default 1, at least --warmup)")
      ->type_name("S");
  sweep->add_flag("--progress", f.progress, "Progress lines on stderr even when it is not a terminal");
  add_output_flags(*sweep, f.output);
  return sweep;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Attention head sizing: which head layout runs fastest for a hidden size.", "attention_bench"};
  app.footer(columns_help(tool_declaration("attention_bench")));
  app.require_subcommand(1);
#if defined(REDLINE_HAVE_GBENCH_FLAGS)
  BenchmarkArgs args;
  try {
    args = split_benchmark_args(argc, argv, "attention_bench");
  } catch (const UsageError& e) {
    std::cerr << "attention_bench: " << e.what() << "\n";
    return kExitUsage;
  }
  std::vector<char*> ours = args.ours;
#else
  // Built without Google Benchmark: no --benchmark_* flags, and no sweep.
  const BenchmarkArgs* args = nullptr;
  std::vector<char*> ours(argv, argv + argc);
#endif
  install_interrupt_handlers();

  PlanFlags plan_flags;
  SweepFlags sweep_flags;
  CLI::App* plan = add_plan(app, plan_flags);
  CLI::App* sweep = add_sweep(app, sweep_flags);

  return run_tool(app, static_cast<int>(ours.size()), ours.data(), [&] {
    if (plan->parsed()) return run_plan(plan_flags);
#if defined(REDLINE_HAVE_GBENCH_FLAGS)
    if (sweep->parsed()) return run_sweep(sweep_flags, &args);
#else
    if (sweep->parsed()) return run_sweep(sweep_flags, args);
#endif
    throw UsageError("give a subcommand: plan or sweep");
  });
}
