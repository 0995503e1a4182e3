// The plan's inputs from flags and the tools' CSVs: every figure with its
// source, flags over files, and bad input (exit 2) naming the flag.
#pragma once

#include <filesystem>
#include <vector>

#include "bench/plan/plan_flags.hpp"
#include "harness/plan/knob_analysis.hpp"
#include "harness/plan/projection.hpp"

namespace redline::plan {

// An input file the plan read, with the flag that named it ("--sweep", or
// "--from" for one found in the run folder).
struct InputFile {
  std::string flag;
  std::filesystem::path path;
};

struct ResolvedInputs {
  PlanInputs plan;
  KnobInputs knobs;
  std::vector<InputFile> files;  // each CSV read and the JSON beside it
};

ResolvedInputs resolve_inputs(const PlanFlags& flags);

}  // namespace redline::plan
