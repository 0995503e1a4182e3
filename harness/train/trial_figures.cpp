#include "harness/train/trial_figures.hpp"

#include <cmath>

namespace redline::train {

std::string trial_figure_line(const std::string& name, double value) {
  return name + ": " + metric_text(value) + "\n";
}

// \b: mfu_pct never matches inside another name; the value as to_chars
// writes a double (digits, '.', an exponent with its sign).
std::string trial_figure_pattern(const std::string& name) { return "\\b" + name + ": ([-+0-9.eE]+)"; }

void set_timed_step(Row& row, std::int64_t seq) {
  const auto batch = parameter_number(row.param_value("batch_size").value_or(""));
  const auto tokens_per_s = row.metric_value("tokens_per_s");
  if (row.status != RowStatus::ok || !batch || !tokens_per_s || !(std::isfinite(*tokens_per_s) && *tokens_per_s > 0)) return;
  for (auto& [name, value] : row.metrics)
    if (name == "step_time_ms") value = 1e3 * *batch * static_cast<double>(seq) / *tokens_per_s;
}

}  // namespace redline::train
