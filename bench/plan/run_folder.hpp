// Which CSV in a suite run folder (results/runs/<id>/<entry>.csv) is which
// tool's, by the CSV's own `tool` column (entry names are the suite's to
// choose), and what those tools concluded in the JSON beside each CSV.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "harness/report/csv_reader.hpp"

namespace redline::plan {

struct RunFiles {
  std::optional<std::filesystem::path> allreduce, sweep, checkpoint;
};

// The first CSV of each tool with ok rows (for the all-reduce, ok all_reduce
// rows: a skipped NCCL entry beside a host one is passed over). A folder that
// does not exist or holds none of them is a UsageError naming --from.
RunFiles find_run_files(const std::string& dir);

// Why <csv stem>.json may not be read beside `table` (read from `csv`): it
// reports another run (its run_id is not the CSV's), so its recommended
// batch, accumulation plan or rank count would be that run's. Empty when it
// is the CSV's own, or absent.
std::string json_of_another_run(const CsvTable& table, const std::filesystem::path& csv);

// Whether a sweep's JSON says its throughput, and so its step_time_ms, came
// from the trials' wall time (start-up included); false without one.
bool recorded_wall_time_throughput(const std::filesystem::path& csv);

// From <csv stem>.json's summary: the rank count an all-reduce ran at, a
// sweep's recommended batch, and the GBS and DP of its accumulation line.
std::optional<std::int64_t> recorded_ranks(const std::filesystem::path& csv);
std::optional<std::int64_t> recorded_recommended_batch(const std::filesystem::path& csv);
std::optional<std::pair<std::int64_t, std::int64_t>> recorded_gbs_dp(const std::filesystem::path& csv);

}  // namespace redline::plan
