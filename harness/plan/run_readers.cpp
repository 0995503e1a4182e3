#include "harness/plan/run_readers.hpp"

#include <vector>

#include "harness/core/units.hpp"
#include "harness/measure/stats.hpp"
#include "harness/plan/csv_cells.hpp"
#include "harness/report/report.hpp"

namespace redline {
namespace {

std::string lines_text(const std::vector<std::size_t>& lines) {
  std::string text = lines.size() > 1 ? "lines " : "line ";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) text += ',';
    text += std::to_string(lines[i]);
  }
  return text;
}

// time_s of the first ok row of a stage, or unknown.
Figure stage_seconds(const CsvTable& t, const std::string& stage, const std::string& file, const std::string& flag) {
  for (std::size_t r = 0; r < t.rows.size(); ++r)
    if (t.value(r, "stage") == stage && t.value(r, "status") == "ok") {
      // The state size it was measured at: a bigger model's checkpoint costs more.
      const std::string bytes = t.value(r, "bytes");
      const auto size = parameter_number(bytes);
      return {cell_number(t, r, "time_s", file, flag),
              file + " line " + std::to_string(t.row_lines[r]) + " (stage " + stage +
                  (size ? ", " + format_size(static_cast<std::uint64_t>(*size)) + " state" : "") + ")"};
    }
  return {};
}

}  // namespace

std::map<std::int64_t, Figure> read_step_times(const CsvTable& t, const std::string& file, const std::string& flag) {
  require_columns(t, file, flag, {"batch_size", "step_time_ms", "status"}, "a batch sweep's CSV has them");
  std::map<std::int64_t, std::pair<std::vector<double>, std::vector<std::size_t>>> by_batch;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (t.value(r, "status") != "ok" || t.value(r, "step_time_ms").empty()) continue;
    auto& [values, lines] = by_batch[static_cast<std::int64_t>(cell_number(t, r, "batch_size", file, flag))];
    values.push_back(cell_number(t, r, "step_time_ms", file, flag));
    lines.push_back(t.row_lines[r]);
  }
  std::map<std::int64_t, Figure> times;
  for (const auto& [batch, entry] : by_batch)
    times[batch] = {summarize(entry.first).median,
                    file + " " + lines_text(entry.second) + " (batch_size " + std::to_string(batch) + ")"};
  return times;
}

CheckpointCosts read_checkpoint_costs(const CsvTable& t, const std::string& file, const std::string& flag) {
  require_columns(t, file, flag, {"stage", "time_s", "status"}, "a checkpoint benchmark's CSV has them");
  CheckpointCosts c;
  c.stall_s = stage_seconds(t, "save", file, flag);
  c.restore_s = stage_seconds(t, "restore", file, flag);
  c.snapshot_s = stage_seconds(t, "async.snapshot", file, flag);
  c.persist_s = stage_seconds(t, "async.persist", file, flag);
  for (std::size_t r = 0; r < t.rows.size() && t.column("mtbf_h"); ++r)
    if (t.value(r, "stage") == "advice_sync" && !t.value(r, "mtbf_h").empty()) {
      const double hours = cell_number(t, r, "mtbf_h", file, flag);
      c.mtbf_s = {hours * 3600.0, file + " line " + std::to_string(t.row_lines[r]) + " (advice_sync, mtbf_h " +
                                      format_number(hours, 2) + ")"};
      break;
    }
  return c;
}

}  // namespace redline
