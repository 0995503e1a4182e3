// What a collective sweep has measured so far, kept where another thread can
// save it: when a rank dies, hangs or freezes, the watchdog thread of rank 0
// saves the completed points and an error row naming the rank and the point
// before the run is aborted, while the main thread is stuck in a collective.
// Every save goes through one lock, and only the first one writes: the final
// report and a failure's report never write the same file at once.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/report/report.hpp"

namespace redline {

class SweepRecord {
 public:
  // Writes a report and its --per-rank-csv companion (rank 0's files).
  using Save = std::function<void(const Report& report, const Report& per_rank)>;

  // `report`: the run's tool, run id and environment, and no rows yet.
  explicit SweepRecord(Report report);

  // Where reports go; without one (the other ranks), saving does nothing.
  void set_save(Save save);
  void set_environment(Environment env);
  void add_summary(std::string key, std::string value);
  void add(Row row);
  void add_per_rank(Row row);
  // The point now measured, whose parameters an error row takes if the run
  // fails in it; end_point when it is done.
  void begin_point(Row point);
  void end_point();
  // Rows of the size in progress already measured: its out-of-place result,
  // gathered before the in-place half starts. The size's rows are added
  // together once both halves are in (group by group, out of place then in
  // place), so until then a failure saves these before its error row.
  // Replaces what was held; hold({}) once the size is done.
  void hold(std::vector<Row> rows);

  std::vector<Row> rows() const;
  std::vector<Row> per_rank_rows() const;
  Report report() const;

  // Saves the report as it stands. False when there is nowhere to save or a
  // save came first.
  bool save();
  // Adds the held rows, an error row for the point in progress (status
  // error, `what` in its note; no parameters when no point is in progress)
  // and the result "FAILED: <what>", then saves. `announce` hears how many
  // rows were measured or skipped before (the held ones too), right before
  // the save, and only when there is one. False as save().
  bool save_after_failure(const std::string& what, const std::function<void(std::size_t rows)>& announce = {});
  // How many point rows were measured or skipped (not error rows).
  std::size_t completed_rows() const;

 private:
  bool save_locked();
  std::size_t completed_rows_locked() const;
  Report per_rank_report_locked() const;

  mutable std::mutex mutex_;
  Report report_;
  std::vector<Row> per_rank_;
  std::optional<Row> point_;
  std::vector<Row> held_;
  Save save_;
  bool saved_ = false;
};

}  // namespace redline
