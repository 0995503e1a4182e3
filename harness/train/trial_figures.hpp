// The figures a `train_step_bench run` trial prints for its parent
// `train_step_bench sweep`, one `name: value` line each on stdout, and the
// patterns the batch-sweep engine reads them back with (its metric regexes).
// Both sides take them from here, so what one prints the other reads.
#pragma once

#include <array>
#include <string>

namespace redline::train {

// The trial's throughput first (the sweep's metric), then what each row
// carries beside it.
inline constexpr std::array<const char*, 4> kTrialFigures = {"tokens_per_s", "mfu_pct", "measured_peak_bytes",
                                                             "predicted_peak_bytes"};

// "name: value\n", the value in its shortest form that reads back exactly
// (1e-05, 81604378624, 8e+10).
std::string trial_figure_line(const std::string& name, double value);

// The pattern whose first group is the value of `name`'s line.
std::string trial_figure_pattern(const std::string& name);

}  // namespace redline::train
