// checkpoint_bench save|restore|all|gpu: what a training checkpoint costs on
// this node and its storage (stall, bandwidth against the storage's own
// ceiling, each safety step), whether an async save hides the stall, and how
// often to checkpoint for a failure rate (Young/Daly).
// Flags -> plan -> stages -> report.
#include <utility>

#include "bench/checkpoint/checkpoint_plan.hpp"
#include "bench/checkpoint/checkpoint_run.hpp"
#include "bench/tool_columns.hpp"
#include "harness/report/schema_document.hpp"
#include "harness/report/tool_main.hpp"
#include "harness/tracking/sweep_charts.hpp"

int main(int argc, char** argv) {
  using namespace redline;
  CheckpointFlags flags;
  CLI::App app{"What a training checkpoint costs here: GPU->host copies, storage stages against the storage's own "
               "ceiling, each safety step, restore with verification, async save, and the Young/Daly interval.\n\n"
               "State size: --size, or --params/--model x bytes per parameter (adam 14 B: bf16 weights 2 + fp32 "
               "master 4 + Adam m,v 8; sgd 10; none 6).",
               "checkpoint_bench"};
  app.footer(columns_help(tool_declaration("checkpoint_bench")));
  add_checkpoint_flags(app, flags);
  return run_tool(app, argc, argv, [&] {
    flags.given = flags_given(app);
    CheckpointPlan plan = to_plan(flags);
    validate_output_paths(flags.output);
    CheckpointRun run = start_run(std::move(plan));
    run_checkpoint_stages(run);
    finish_run(run);
    add_sweep_charts(run.report);  // for its JSON, as `redline report` draws them
    write_reports(run.report, flags.output);
    return exit_status(run);
  });
}
