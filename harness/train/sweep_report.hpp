// The training-step sweep's one report from its recompute modes' batch sweeps:
// each mode's rows and summary lines join it, and the mode's figures are
// read for the verdict. Pure C++.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/report/report.hpp"
#include "harness/train/activation_memory.hpp"
#include "harness/train/recompute_verdict.hpp"

namespace redline {

// Moves one mode's batch-sweep `rows` into `report`, each with the mode as
// its first parameter and the step its trial timed as step_time_ms
// (train::set_timed_step at `seq`), and adds `summary` with each key
// prefixed by the mode's name. Returns the mode's figures (mode_sweep), read
// before the rows move.
ModeSweep add_mode_to_report(Report& report, Recompute mode, std::vector<Row>&& rows,
                             const std::vector<std::pair<std::string, std::string>>& summary,
                             std::optional<std::int64_t> largest_fit, std::int64_t seq);

}  // namespace redline
