#include "harness/train/trial_figures.hpp"

#include "harness/report/report.hpp"

namespace redline::train {

std::string trial_figure_line(const std::string& name, double value) {
  return name + ": " + metric_text(value) + "\n";
}

// \b: mfu_pct never matches inside another name; the value as to_chars
// writes a double (digits, '.', an exponent with its sign).
std::string trial_figure_pattern(const std::string& name) { return "\\b" + name + ": ([-+0-9.eE]+)"; }

}  // namespace redline::train
