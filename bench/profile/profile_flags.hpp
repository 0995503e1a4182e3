// redline profile's command line: flags as text (validated by the harness
// parsers, so every message names the flag and the value), the command after
// "--", and the command itself (bench/profile/profile_command.cpp).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "harness/profile/step_detection.hpp"
#include "harness/report/output.hpp"

namespace redline::profile {

struct ProfileFlags {
  std::string steps = "0", skip = "1", top = "10";
  std::string ceilings, trace, from_trace;
  std::string device;  // empty: the device with the most GPU time
  std::string step_range = kDefaultStepRange, step_regex;
  bool overhead = false, gemm_shapes = false, nccl_sizes = false;
  std::vector<std::string> command;
  OutputOptions output;
};

CLI::App* add_profile_subcommand(CLI::App& app, ProfileFlags& flags);
int run_profile(const ProfileFlags& flags);

}  // namespace redline::profile
