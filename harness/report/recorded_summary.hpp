// The "summary" object a tool recorded in its JSON report (context.redline.
// summary), read back as (key, value) pairs in order: what a run concluded,
// for readers that join runs (redline suite's printout, redline plan); and
// the run it belongs to.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace redline {

// Empty when the file is missing or holds no summary.
std::vector<std::pair<std::string, std::string>> recorded_summary(const std::filesystem::path& json_file);

// The run it reports (context.redline.run_id), to match it with the CSV
// beside it; empty when the file is missing or names none.
std::string recorded_run_id(const std::filesystem::path& json_file);

}  // namespace redline
