// The figures a training-step trial (`run`) prints for its parent sweep
// (`sweep`), one `name: value` line each on stdout, and the
// patterns the batch-sweep engine reads them back with (its metric regexes).
// Both sides take them from here, so what one prints the other reads.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "harness/report/report.hpp"

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

// Sets an ok sweep row's step_time_ms to the step its trial timed: batch_size
// x `seq` tokens at the trial's tokens_per_s. The batch-sweep engine fills the
// column with the trial's wall time over one step (process start, cuDNN set-up
// and warm-up included: 887 ms for a 51 ms step); rows without both figures
// are left as they are.
void set_timed_step(Row& row, std::int64_t seq);

}  // namespace redline::train
