// The measurement policy as GPU tools take it on their command line
// (--warmup, --min-time, --max-time, --target-cv, --min-reps, --max-reps),
// checked into a MeasurementPolicy; each bad value a UsageError naming the
// flag and the value.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "harness/measure/measurement.hpp"

namespace redline {

struct PolicyFlags {
  std::string warmup = "0.2", min_time = "0.25", max_time = "2", target_cv = "0.01", min_reps = "10",
              max_reps = "500";
};

// Adds the six flags to `app`; `unit` names what is timed ("shape", "case").
// --first-warmup stays with the tool: not every tool has a first case.
void add_policy_flags(CLI::App& app, PolicyFlags& f, const std::string& unit);

MeasurementPolicy policy_of(const PolicyFlags& f);

// Seconds between 0 and 3600 (UsageError naming `flag` otherwise).
double positive_seconds(const char* flag, const std::string& text);

}  // namespace redline
