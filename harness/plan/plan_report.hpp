// A projection as rows (one per scenario: the plan, then each knob moved) and
// as summary lines that show each formula with its figures and name where
// every figure came from.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "harness/plan/knob_analysis.hpp"
#include "harness/plan/projection.hpp"
#include "harness/report/report.hpp"

namespace redline {

using SummaryLines = std::vector<std::pair<std::string, std::string>>;

// scenario=plan first, then the alternatives (a `skipped` row with the reason
// where a knob cannot be evaluated); change_pct is the total against the plan's.
std::vector<Row> plan_rows(const Projection& plan, const std::vector<Alternative>& alternatives);

// The inputs with their sources, the plan, the step, the run, the
// checkpoints, the total, what dominates and each knob.
SummaryLines plan_summary(const PlanInputs& in, const Projection& plan, const std::vector<Alternative>& alternatives);

// "32490 s (9.025 h)".
std::string duration_text(double seconds);

}  // namespace redline
