// Where a finished (or interrupted) report goes: the console table on stdout
// and, when asked, --csv and --json files, each written atomically.
#pragma once

#include <string>
#include <vector>

#include "harness/report/report.hpp"
#include "harness/report/schema.hpp"

namespace redline {

struct OutputOptions {
  std::string csv_path;   // --csv FILE
  std::string json_path;  // --json FILE
  bool quiet = false;     // --quiet: no console table
};

// Before any work: a --csv/--json path that is a directory or whose
// directory cannot be created is a UsageError naming the flag.
void validate_output_paths(const OutputOptions& options);
// The same check for one more output file a tool writes (named by `flag`).
void validate_output_path(const char* flag, const std::string& path);
// A UsageError naming `second_flag` when both flags name one file (through
// "./" or symbolic links too): the later write would replace the earlier.
void refuse_one_file_for_two(const char* first_flag, const std::string& first, const char* second_flag,
                             const std::string& second);

// Throws std::runtime_error naming the file when a write fails; a failed
// write never leaves a truncated file behind. A column the report's tool
// does not declare (undeclared_columns) is refused under the tests
// (REDLINE_STRICT_SCHEMA=1) and warned about otherwise.
void write_reports(const Report& report, const OutputOptions& options);

// The parameters and metrics the rows carry that `report.tool` does not
// declare in `schema`, sorted; empty for a tool the schema does not know.
std::vector<std::string> undeclared_columns(const Report& report, const Schema& schema);

}  // namespace redline
