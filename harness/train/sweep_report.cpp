#include "harness/train/sweep_report.hpp"

#include "harness/train/trial_figures.hpp"

namespace redline {

ModeSweep add_mode_to_report(Report& report, Recompute mode, std::vector<Row>&& rows,
                             const std::vector<std::pair<std::string, std::string>>& summary,
                             std::optional<std::int64_t> largest_fit, std::int64_t seq) {
  // Read first: read after the move, every mode looked empty and the
  // verdict said none ran (found on an H200).
  ModeSweep figures = mode_sweep(mode, rows, largest_fit);
  for (Row& row : rows) {
    row.params.insert(row.params.begin(), {"recompute", recompute_name(mode)});
    train::set_timed_step(row, seq);
    report.rows.push_back(std::move(row));
  }
  for (const auto& [key, value] : summary) report.summary.emplace_back(std::string(recompute_name(mode)) + " " + key, value);
  return figures;
}

}  // namespace redline
