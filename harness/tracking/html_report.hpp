// A single self-contained HTML report (inline SVG, no scripts or network):
// every sweep curve with its saturation point, the GEMM sawtooth with the
// model's prediction, busbw against message size, the headline figures over
// time with their trends, and the
// comparison with a baseline, regressions highlighted.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/tracking/compare.hpp"
#include "harness/tracking/headlines.hpp"
#include "harness/report/run_results.hpp"
#include "harness/report/schema.hpp"

namespace redline {

struct ReportInputs {
  std::string title;
  RunResults run;
  std::optional<Comparison> comparison;  // with --baseline
  std::string baseline_name;
  std::vector<HeadlineChart> history;    // the headline figures over time (may be empty)
  Schema schema = Schema::compiled_in();
};

std::string render_html_report(const ReportInputs& inputs);

}  // namespace redline
