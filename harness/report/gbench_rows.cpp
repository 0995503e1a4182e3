#include "harness/report/gbench_rows.hpp"

#include <algorithm>
#include <stdexcept>

namespace redline {
namespace {

constexpr RowStatus kStatuses[] = {RowStatus::oom, RowStatus::error, RowStatus::skipped, RowStatus::wrong};

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = text.find(separator, start);
    parts.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

void set_status_from_error(Row& row, const std::string& message) {
  row.status = RowStatus::error;
  row.note = message;
  for (const RowStatus status : kStatuses) {
    const std::string prefix = to_string(status) + ": ";
    if (message.starts_with(prefix)) {
      row.status = status;
      row.note = message.substr(prefix.size());
    }
  }
}

}  // namespace

std::string gbench_case_name(const std::string& family,
                             const std::vector<std::pair<std::string, std::string>>& params) {
  std::string name = family;
  for (const auto& [key, value] : params) {
    if (key.find_first_of("/:") != std::string::npos || value.find_first_of("/:") != std::string::npos)
      throw std::invalid_argument("benchmark parameter '" + key + "=" + value + "' contains '/' or ':'");
    name += "/" + key + ":" + value;
  }
  return name;
}

Row row_from_gbench_run(const benchmark::BenchmarkReporter::Run& run) {
  Row row;
  // function_name holds the registered name; Google Benchmark appends its own
  // segments (iterations:1, manual_time, repeats:3) to other name fields.
  const auto segments = split(run.run_name.function_name, '/');
  for (std::size_t i = 1; i < segments.size(); ++i) {
    const std::size_t colon = segments[i].find(':');
    if (colon == std::string::npos) continue;
    row.param(segments[i].substr(0, colon), segments[i].substr(colon + 1));
  }
  row.repetition = run.repetition_index > 0 ? static_cast<int>(run.repetition_index) : 0;
  if (run.error_occurred) {
    set_status_from_error(row, run.error_message);
    return row;
  }
  const double iterations = run.iterations > 0 ? static_cast<double>(run.iterations) : 1.0;
  row.metric("time_us", run.real_accumulated_time / iterations * 1e6);
  for (const auto& [name, counter] : run.counters) row.metric(name, counter.value);
  row.note = run.report_label;
  if (row.metric_value("wrong").value_or(0) > 0) row.status = RowStatus::wrong;
  return row;
}

RowCollector::RowCollector(benchmark::BenchmarkReporter* forward) {
  if (forward) forwards_.push_back(forward);
}

void RowCollector::add_forward(benchmark::BenchmarkReporter* reporter) { forwards_.push_back(reporter); }

void RowCollector::set_repetition(int repetition, int repetitions) {
  repetition_ = repetition;
  repetitions_ = repetitions;
}

bool RowCollector::ReportContext(const Context& context) {
  if (context_sent_) return true;
  context_sent_ = true;
  bool ok = true;
  for (auto* forward : forwards_) ok = forward->ReportContext(context) && ok;
  return ok;
}

void RowCollector::ReportRuns(const std::vector<Run>& runs) {
  for (const auto& run : runs) {
    Row row = row_from_gbench_run(run);
    if (run.repetition_index <= 0) row.repetition = repetition_;
    if (run.run_type == Run::RT_Iteration) {
      rows_.push_back(std::move(row));
    } else if (run.aggregate_name == "median") {
      medians_.push_back(std::move(row));
    }
  }
  if (forwards_.empty()) return;
  std::vector<Run> forwarded = runs;
  if (repetitions_ > 1)
    for (auto& run : forwarded)
      if (run.repetition_index <= 0) {
        run.repetition_index = repetition_;
        run.repetitions = repetitions_;
      }
  for (auto* forward : forwards_) forward->ReportRuns(forwarded);
}

void RowCollector::Finalize() {}

void RowCollector::finish() {
  if (finished_) return;
  if (!context_sent_) ReportContext(Context());
  finished_ = true;
  for (auto* forward : forwards_) forward->Finalize();
}

std::vector<Row> RowCollector::take_rows() {
  for (auto& median : medians_) {
    const std::string key = median.case_key();
    const bool has_runs =
        std::any_of(rows_.begin(), rows_.end(), [&](const Row& r) { return r.case_key() == key; });
    if (!has_runs) rows_.push_back(std::move(median));
  }
  medians_.clear();
  return std::exchange(rows_, {});
}

}  // namespace redline
