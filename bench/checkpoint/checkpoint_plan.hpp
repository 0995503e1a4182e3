// checkpoint_bench's command line: the flags as typed, and the plan they make
// (which stages run, the checkpoint configuration, the failure rate), checked
// so that every bad value is a usage error naming its flag.
#pragma once

#include <CLI/CLI.hpp>

#include <set>
#include <string>

#include "harness/checkpoint/checkpoint_rows.hpp"
#include "harness/report/output.hpp"

namespace redline {

struct CheckpointFlags {
  std::string command;
  std::string size, params, model, optimizer = "adam", dir;
  std::string threads = "4", chunk = "64M", rounds = "4";
  std::string mtbf, gpu_mtbf, gpus;
  bool no_fsync = false, keep = false, overwrite = false;
  OutputOptions output;
  std::set<std::string> given;  // the flags typed, filled after parsing (flags_given)
};

struct CheckpointPlan {
  bool save = false, restore = false, gpu = false;
  // `all` without --keep: the checkpoint it writes is its own, under its own
  // name, and removed at the end.
  bool own_checkpoint = false;
  CheckpointConfig cfg;
  double mtbf_s = 24 * 3600.0;
  std::string mtbf_source = "the default (pass --mtbf, or --gpu-mtbf with --gpus)";
  std::string size_source;

  // The `gpu` command: the GPU copy stages alone.
  bool gpu_only() const { return gpu && !save && !restore; }
};

// The command and every option, collected as text (the plan parses them).
void add_checkpoint_flags(CLI::App& app, CheckpointFlags& flags);

// Throws UsageError naming the flag and its value.
CheckpointPlan to_plan(const CheckpointFlags& flags);

}  // namespace redline
