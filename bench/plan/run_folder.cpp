#include "bench/plan/run_folder.hpp"

#include <algorithm>
#include <regex>
#include <stdexcept>

#include "harness/batch/trial_summary.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/plan/busbw_curve.hpp"
#include "harness/plan/csv_cells.hpp"
#include "harness/report/csv_reader.hpp"
#include "harness/report/recorded_summary.hpp"

namespace fs = std::filesystem;

namespace redline::plan {
namespace {

bool has_ok_row(const CsvTable& t) {
  for (std::size_t r = 0; r < t.rows.size(); ++r)
    if (t.value(r, "status") == "ok") return true;
  return false;
}

// The largest message an ok all_reduce row measured; 0 when none. A run may
// hold several allreduce_bench CSVs (every collective up to a few MB, and
// all_reduce alone up to the gradient bucket): the one reaching furthest
// brackets the bucket.
double largest_all_reduce(const CsvTable& t, const fs::path& csv) {
  double largest = 0;
  for (std::size_t r = 0; r < t.rows.size(); ++r)
    if (whole_communicator_all_reduce(t, r))
      largest = std::max(largest, cell_number(t, r, "bytes", csv.string(), "--from"));
  return largest;
}

fs::path json_beside(const fs::path& csv) {
  fs::path json = csv;
  return json.replace_extension(".json");
}

std::optional<std::string> summary_value(const fs::path& csv, const std::string& key) {
  for (const auto& [k, v] : recorded_summary(json_beside(csv)))
    if (k == key) return v;
  return std::nullopt;
}

// The first whole number after `label` in `text`: "GBS 1024 = ..." -> 1024.
std::optional<std::int64_t> number_after(const std::string& text, const std::string& label) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(label + " ?([0-9]+)"))) return std::nullopt;
  try {
    return std::stoll(m[1]);
  } catch (const std::out_of_range&) {
    return std::nullopt;  // no batch is that large: not a figure to read
  }
}

}  // namespace

RunFiles find_run_files(const std::string& dir) {
  if (!fs::exists(dir)) throw UsageError("--from", dir, "no such run folder");
  if (!fs::is_directory(dir)) throw UsageError("--from", dir, "is not a folder: give a suite run's folder");
  std::vector<fs::path> csvs;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".csv" && entry.path().filename() != "suite.csv") csvs.push_back(entry.path());
  std::sort(csvs.begin(), csvs.end());
  RunFiles files;
  double allreduce_reach = 0;
  for (const auto& csv : csvs) {
    CsvTable t;
    try {
      t = read_csv(csv);
    } catch (const std::runtime_error&) {
      continue;  // not a report (a stray file): the tools' CSVs are what we look for
    }
    if (t.rows.empty()) continue;
    const std::string& tool = t.value(0, "tool");
    if (tool == "allreduce_bench" && largest_all_reduce(t, csv) > allreduce_reach) {
      files.allreduce = csv;
      allreduce_reach = largest_all_reduce(t, csv);
    }
    if (tool == "batch_sweep" && !files.sweep && has_ok_row(t)) files.sweep = csv;
    if (tool == "checkpoint_bench" && !files.checkpoint && has_ok_row(t)) files.checkpoint = csv;
  }
  if (!files.allreduce && !files.sweep && !files.checkpoint)
    throw UsageError("--from", dir, "holds no allreduce_bench, batch_sweep or checkpoint_bench CSV with ok rows");
  return files;
}

std::string json_of_another_run(const CsvTable& t, const fs::path& csv) {
  const fs::path json = json_beside(csv);
  const std::string json_run = recorded_run_id(json);
  const std::string csv_run = t.rows.empty() ? "" : t.value(0, "run_id");
  if (json_run.empty() || csv_run.empty() || json_run == csv_run) return "";
  return json.filename().string() + " beside it reports another run (run_id " + json_run + ", the CSV's " + csv_run +
         "): its summary would be that run's; give that run's CSV, or move the JSON away";
}

bool recorded_wall_time_throughput(const fs::path& csv) {
  const auto metric = summary_value(csv, "metric");
  return metric && throughput_from_wall_time(*metric);
}

std::optional<std::int64_t> recorded_ranks(const fs::path& csv) {
  const auto ranks = summary_value(csv, "ranks");  // "2 (2 processes x 1 local)"
  return ranks ? number_after(*ranks, "^") : std::nullopt;
}

std::optional<std::int64_t> recorded_recommended_batch(const fs::path& csv) {
  const auto rec = summary_value(csv, "recommended_batch");  // "32 (the saturation batch)"
  return rec ? number_after(*rec, "^") : std::nullopt;
}

std::optional<std::pair<std::int64_t, std::int64_t>> recorded_gbs_dp(const fs::path& csv) {
  const auto line = summary_value(csv, "gradient_accumulation");  // "GBS 1024 = MBS 32 x GA 4 x DP 8"
  if (!line) return std::nullopt;
  const auto gbs = number_after(*line, "GBS"), dp = number_after(*line, "DP");
  if (!gbs || !dp) return std::nullopt;
  return std::make_pair(*gbs, *dp);
}

}  // namespace redline::plan
