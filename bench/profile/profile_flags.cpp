#include "bench/profile/profile_flags.hpp"

#include "bench/tool_columns.hpp"
#include "harness/report/schema_document.hpp"
#include "harness/report/tool_main.hpp"

namespace redline::profile {

CLI::App* add_profile_subcommand(CLI::App& app, ProfileFlags& f) {
  CLI::App* p = app.add_subcommand(
      "profile", "Where a program's training step spends its GPU time (CUPTI, no change to the program), against "
                 "what this GPU was measured to do: redline profile [OPTIONS] -- COMMAND [ARGS...] (docs/profile.md)");
  p->footer(columns_help(tool_declaration("redline_profile")));
  p->add_option("--steps", f.steps, "Profile at most N steps after the skipped ones (default 0: all)")->type_name("N");
  p->add_option("--skip", f.skip, "Skip the first K steps found: warm-up (default 1)")->type_name("K");
  p->add_option("--ceilings", f.ceilings,
                "A suite run folder, or results/references/<GPU>: set each category against its measured ceiling")
      ->type_name("RUN_DIR");
  p->add_option("--step-range", f.step_range,
                "Steps are the NVTX ranges whose name matches REGEX (default: a step or Step word: train_step, "
                "step 3, ProfilerStep#3)")
      ->type_name("REGEX");
  p->add_option("--step-regex", f.step_regex,
                "Without step ranges: a step ends at each output line matching REGEX (a trainer's per-step log)")
      ->type_name("REGEX");
  p->add_option("--device", f.device,
                "Profile GPU N's records where the program drives several (default: the one with the most GPU time)")
      ->type_name("N");
  p->add_option("--top", f.top, "Kernels listed by total time (default 10)")->type_name("N");
  p->add_option("--trace", f.trace, "Keep the raw trace in FILE (default: a temporary file, removed)")->type_name("FILE");
  p->add_option("--from-trace", f.from_trace,
                "Profile a saved trace (--trace kept it) instead of running a program: no GPU needed")
      ->type_name("FILE");
  p->add_flag("--overhead", f.overhead,
              "Run the command a second time without the profiler and print the profiler's overhead");
  p->add_flag("--gemm-shapes", f.gemm_shapes,
              "Record each cuBLAS/cuBLASLt GEMM call's shape (a preloaded library; one host-side record per call, "
              "and CUPTI's API records) so GEMM time is set against the measured MAMF");
  p->add_flag("--nccl-sizes", f.nccl_sizes,
              "Record each NCCL call's collective and message size (a preloaded library; one host-side record per "
              "call, and CUPTI's API records) so NCCL time is set against the bandwidth --ceilings measured for the "
              "same collective and size");
  add_output_flags(*p, f.output);
  p->add_option("COMMAND", f.command, "The program to profile and its arguments, after --")->expected(-1);
  return p;
}

}  // namespace redline::profile
