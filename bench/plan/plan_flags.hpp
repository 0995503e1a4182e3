// redline plan's command line: the flags as text (validated by the harness
// parsers, so every message names the flag and the value), and the command.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "harness/report/output.hpp"

namespace redline::plan {

struct PlanFlags {
  std::string step_time_ms, mbs, dp, gbs;
  std::string samples, epochs = "1", tokens, seq;
  std::string grad_bytes, params, grad_dtype = "bf16";
  std::string busbw, allreduce_csv, bucket_mb = "25", overlap = "0", backward_share;
  std::string ckpt_stall, restore, mtbf, async_snapshot, async_persist, checkpoint_csv;
  std::string sweep_csv, recommended_mbs, expect_busbw;
  std::string from;
  OutputOptions output;
};

CLI::App* add_plan_subcommand(CLI::App& app, PlanFlags& flags);

// Reads the inputs, projects the run and writes the reports; exit status.
int run_plan(const PlanFlags& flags);

}  // namespace redline::plan
