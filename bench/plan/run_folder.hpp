// Which CSV in a suite run folder (results/runs/<id>/<entry>.csv) is which
// tool's, by the CSV's own `tool` column (entry names are the suite's to
// choose), and what those tools concluded in the JSON beside each CSV.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace redline::plan {

struct RunFiles {
  std::optional<std::filesystem::path> allreduce, sweep, checkpoint;
};

// The first CSV of each tool with ok rows (for the all-reduce, ok all_reduce
// rows: a skipped NCCL entry beside a host one is passed over). A folder that
// does not exist or holds none of them is a UsageError naming --from.
RunFiles find_run_files(const std::string& dir);

// From <csv stem>.json's summary: the rank count an all-reduce ran at, a
// sweep's recommended batch, and the GBS and DP of its accumulation line.
std::optional<std::int64_t> recorded_ranks(const std::filesystem::path& csv);
std::optional<std::int64_t> recorded_recommended_batch(const std::filesystem::path& csv);
std::optional<std::pair<std::int64_t, std::int64_t>> recorded_gbs_dp(const std::filesystem::path& csv);

}  // namespace redline::plan
