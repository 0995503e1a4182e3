// Reads results back: a run folder (every tool CSV in it) or one CSV file,
// as rows keyed by tool and case key. Which columns are parameters comes
// from the case key; every other column between the common ones and
// status/note is a metric.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/report/report.hpp"

namespace redline {

struct ResultRow {
  std::string file;   // where it came from, for messages
  std::size_t line = 0;
  std::string run_id, timestamp_utc, host, gpu, tool, case_key, note;
  RowStatus status = RowStatus::ok;
  int repetition = 0;
  std::map<std::string, std::string> params;
  std::map<std::string, double> metrics;  // empty cells are absent

  // The parameter's value, "" when the row has none; the metric's, nullopt
  // when its cell was empty or the column absent.
  std::string param(const std::string& name) const;
  std::optional<double> metric(const std::string& name) const;
};

struct RunResults {
  std::string source;  // the folder or file given
  std::vector<ResultRow> rows;
};

// The tool as a history names it: "tool[entry]" (the tool, then the entry) when the
// row came from a suite entry named otherwise than the tool, so two entries
// running one tool (host and NCCL collectives) never share a series.
std::string series_tool(const ResultRow& row);

// A folder: every *.csv in it except suite.csv and history.csv. Throws
// CsvError (file:line) for malformed input, std::runtime_error for a missing
// path or a CSV without redline's common columns.
RunResults load_results(const std::filesystem::path& run_or_csv);

// What makes the rows unfit to compare as one run's repetitions, or "" when
// nothing does: a file holding rows of several runs (two run_ids), or one case
// and repetition twice in a file ("file:line: ..."). Pooled, either would be
// judged as extra repetitions of one measurement.
std::string pooled_rows_problem(const RunResults& results);

// A tool's report as its CSV will read back (file empty), so what is computed
// from a tool's own rows matches what is computed from its results later.
RunResults results_of(const Report& report);

}  // namespace redline
