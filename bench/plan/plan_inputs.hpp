// The plan's inputs from flags and the tools' CSVs: every figure with its
// source, flags over files, and bad input (exit 2) naming the flag.
#pragma once

#include "bench/plan/plan_flags.hpp"
#include "harness/plan/knob_analysis.hpp"
#include "harness/plan/projection.hpp"

namespace redline::plan {

struct ResolvedInputs {
  PlanInputs plan;
  KnobInputs knobs;
};

ResolvedInputs resolve_inputs(const PlanFlags& flags);

}  // namespace redline::plan
