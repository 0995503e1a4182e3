#include "collectives/sweep/sweep_record.hpp"

#include "collectives/sweep/sweep_rows.hpp"

namespace redline {

SweepRecord::SweepRecord(Report report) : report_(std::move(report)) {}

void SweepRecord::set_save(Save save) {
  std::lock_guard lock(mutex_);
  save_ = std::move(save);
}

void SweepRecord::set_environment(Environment env) {
  std::lock_guard lock(mutex_);
  report_.env = std::move(env);
}

void SweepRecord::add_summary(std::string key, std::string value) {
  std::lock_guard lock(mutex_);
  report_.summary.emplace_back(std::move(key), std::move(value));
}

void SweepRecord::add(Row row) {
  std::lock_guard lock(mutex_);
  report_.rows.push_back(std::move(row));
}

void SweepRecord::add_per_rank(Row row) {
  std::lock_guard lock(mutex_);
  per_rank_.push_back(std::move(row));
}

void SweepRecord::begin_point(Row point) {
  std::lock_guard lock(mutex_);
  point_ = std::move(point);
}

void SweepRecord::end_point() {
  std::lock_guard lock(mutex_);
  point_.reset();
}

void SweepRecord::hold(std::vector<Row> rows) {
  std::lock_guard lock(mutex_);
  held_ = std::move(rows);
}

std::vector<Row> SweepRecord::rows() const {
  std::lock_guard lock(mutex_);
  return report_.rows;
}

std::vector<Row> SweepRecord::per_rank_rows() const {
  std::lock_guard lock(mutex_);
  return per_rank_;
}

Report SweepRecord::report() const {
  std::lock_guard lock(mutex_);
  return report_;
}

std::size_t SweepRecord::completed_rows() const {
  std::lock_guard lock(mutex_);
  return completed_rows_locked();
}

std::size_t SweepRecord::completed_rows_locked() const {
  std::size_t n = 0;
  for (const Row& row : report_.rows) n += row.status != RowStatus::error;
  return n;
}

bool SweepRecord::save() {
  std::lock_guard lock(mutex_);
  return save_locked();
}

bool SweepRecord::save_after_failure(const std::string& what, const std::function<void(std::size_t)>& announce) {
  std::lock_guard lock(mutex_);
  if (!save_ || saved_) return false;
  report_.rows.insert(report_.rows.end(), held_.begin(), held_.end());
  held_.clear();
  if (announce) announce(completed_rows_locked());
  report_.rows.push_back(error_row(point_.value_or(Row{}), what));
  report_.summary.emplace_back("result", "FAILED: " + what);
  return save_locked();
}

bool SweepRecord::save_locked() {
  if (!save_ || saved_) return false;
  saved_ = true;
  save_(report_, per_rank_report_locked());
  return true;
}

Report SweepRecord::per_rank_report_locked() const {
  Report per_rank;
  per_rank.tool = report_.tool;
  per_rank.run_id = report_.run_id;
  per_rank.env = report_.env;
  per_rank.rows = per_rank_;
  return per_rank;
}

}  // namespace redline
