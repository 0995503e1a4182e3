// redline plan: reads the figures, projects the run, writes the reports.
#include "bench/plan/plan_flags.hpp"
#include "bench/plan/plan_inputs.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/plan/plan_report.hpp"

namespace redline::plan {

int run_plan(const PlanFlags& flags) {
  validate_output_paths(flags.output);
  const ResolvedInputs inputs = resolve_inputs(flags);
  // The reports must not replace a file the plan's figures came from.
  for (const InputFile& input : inputs.files) {
    refuse_one_file_for_two(input.flag.c_str(), input.path.string(), "--csv", flags.output.csv_path);
    refuse_one_file_for_two(input.flag.c_str(), input.path.string(), "--json", flags.output.json_path);
  }
  const Projection projection = project(inputs.plan);
  const std::vector<Alternative> alternatives = knob_alternatives(inputs.plan, inputs.knobs);
  Report report = start_report("redline_plan", capture_environment());
  report.rows = plan_rows(projection, alternatives);
  report.summary = plan_summary(inputs.plan, projection, alternatives);
  report.time_metric = "opt_step_time_s";
  write_reports(report, flags.output);
  return kExitOk;
}

}  // namespace redline::plan
