#include "harness/report/output.hpp"

#include <filesystem>
#include <iostream>
#include <string>

#include "harness/core/atomic_file.hpp"
#include "harness/report/console_table.hpp"
#include "harness/report/csv_writer.hpp"
#include "harness/report/gbench_json.hpp"
#include "harness/core/usage_error.hpp"

namespace redline {

void validate_output_path(const char* flag, const std::string& path) {
  if (path.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec) || fs::path(path).filename().empty())
    throw UsageError(flag, path, "is a directory; give a file name");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec || !fs::is_directory(parent))
      throw UsageError(flag, path, "cannot create its directory " + parent.string() + (ec ? ": " + ec.message() : ""));
  }
  // The report is written at the end, through a temporary file beside it:
  // try that now, so a read-only place fails before the run, not after it.
  if (const auto problem = file_creation_problem(temporary_name_for(path)))
    throw UsageError(flag, path, "cannot be written (" + *problem + ")");
}

void validate_output_paths(const OutputOptions& options) {
  validate_output_path("--csv", options.csv_path);
  validate_output_path("--json", options.json_path);
}

void write_reports(const Report& report, const OutputOptions& options) {
  // Files first: a closed stdout must not cost the results.
  if (!options.csv_path.empty()) write_file_atomically(options.csv_path, to_csv(report));
  if (!options.json_path.empty()) write_file_atomically(options.json_path, to_gbench_json(report));
  if (!options.quiet) std::cout << to_console_table(report) << std::flush;
}

}  // namespace redline
