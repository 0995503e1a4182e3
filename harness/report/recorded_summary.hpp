// The "summary" object a tool recorded in its JSON report (context.redline.
// summary), read back as (key, value) pairs in order: what a run concluded,
// for readers that join runs (redline suite's printout, redline plan).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace redline {

// Empty when the file is missing or holds no summary.
std::vector<std::pair<std::string, std::string>> recorded_summary(const std::filesystem::path& json_file);

}  // namespace redline
