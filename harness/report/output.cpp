#include "harness/report/output.hpp"

#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

#include "harness/core/atomic_file.hpp"
#include "harness/report/console_table.hpp"
#include "harness/report/csv_writer.hpp"
#include "harness/report/gbench_json.hpp"
#include "harness/report/schema.hpp"
#include "harness/core/usage_error.hpp"

namespace redline {

namespace {

// Whether two paths name one file, through "." / ".." and symbolic links
// (the file need not exist yet).
bool same_file_name(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  std::error_code ec_a, ec_b;
  // Absolute first: weakly_canonical leaves a relative name of a file not
  // yet there relative, so "r.csv" and "./r.csv" would differ.
  const auto canonical_a = std::filesystem::weakly_canonical(std::filesystem::absolute(a, ec_a), ec_a);
  const auto canonical_b = std::filesystem::weakly_canonical(std::filesystem::absolute(b, ec_b), ec_b);
  return !ec_a && !ec_b && canonical_a == canonical_b;
}

// Where the report's temporary file can be tried: beside the report when its
// directory exists, else in the nearest directory above that does (the write
// makes the rest). Nothing is created here: runs starting together into one
// new folder must not take each other's directories away. Throws a
// UsageError naming `flag` when that place is a file.
std::filesystem::path probe_place(const char* flag, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::absolute(path).parent_path();
  std::error_code ec;
  fs::path existing = dir;
  while (!fs::exists(existing, ec) && existing.has_relative_path()) existing = existing.parent_path();
  if (!fs::is_directory(existing, ec))
    throw UsageError(flag, path, "cannot create its directory " + dir.string() + ": " + existing.string() +
                                     " is not a directory");
  return existing == dir ? temporary_name_for(path) : existing / temporary_name_for(path).filename();
}

}  // namespace

void validate_output_path(const char* flag, const std::string& path) {
  if (path.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec) || fs::path(path).filename().empty())
    throw UsageError(flag, path, "is a directory; give a file name");
  // The report is renamed over the name: a device (/dev/null), a pipe or a
  // symbolic link there would be replaced by a plain file.
  const fs::file_status existing = fs::symlink_status(path, ec);
  if (fs::is_symlink(existing))
    throw UsageError(flag, path, "is a symbolic link, which the report would replace; give the file it names");
  if (fs::exists(existing) && !fs::is_regular_file(existing))
    throw UsageError(flag, path, "is not a regular file (a device, pipe or socket), which the report would replace");
  // The report is written at the end, through a temporary file beside it:
  // try that now, so a read-only place fails before the run, not after it.
  if (const auto problem = file_creation_problem(probe_place(flag, path)))
    throw UsageError(flag, path, "cannot be written (" + *problem + ")");
}

void validate_output_paths(const OutputOptions& options) {
  validate_output_path("--csv", options.csv_path);
  validate_output_path("--json", options.json_path);
  // One file for both would keep only the JSON.
  refuse_one_file_for_two("--csv", options.csv_path, "--json", options.json_path);
}

void refuse_one_file_for_two(const char* first_flag, const std::string& first, const char* second_flag,
                             const std::string& second) {
  if (same_file_name(first, second))
    throw UsageError(second_flag, second, std::string("is also the ") + first_flag + " file; give each its own file");
}

std::vector<std::string> undeclared_columns(const Report& report, const Schema& schema) {
  std::set<std::string> missing;
  if (!schema.knows_tool(report.tool)) return {};
  for (const Row& row : report.rows) {
    for (const auto& [name, value] : row.params)
      if (!schema.declares(report.tool, name)) missing.insert(name);
    for (const auto& [name, value] : row.metrics)
      if (!schema.declares(report.tool, name)) missing.insert(name);
  }
  return {missing.begin(), missing.end()};
}

namespace {

// An undeclared column is a tool's bug: under the tests
// (REDLINE_STRICT_SCHEMA=1, set for every ctest test) it fails the run before
// anything is written; in a user's run the rows are written all the same, and
// the column named on stderr, so a measured run is never lost to it.
void check_declared(const Report& report) {
  const std::vector<std::string> missing = undeclared_columns(report, Schema::compiled_in());
  if (missing.empty()) return;
  std::string names;
  for (const auto& name : missing) names += (names.empty() ? "" : ", ") + name;
  const std::string problem = report.tool + " writes columns its declaration lacks: " + names +
                              " (declare them in the tool's room: harness/report/declaration.hpp)";
  const char* strict = std::getenv("REDLINE_STRICT_SCHEMA");
  if (strict && *strict && std::string(strict) != "0") throw std::logic_error(problem);
  std::cerr << report.tool << ": warning: " << problem << "\n";
}

}  // namespace

void write_reports(const Report& report, const OutputOptions& options) {
  check_declared(report);
  // Files first: a closed stdout must not cost the results. Each output is
  // tried whatever became of the one before (a full disk under the CSV must
  // not cost the JSON on another, nor the table); each file is whole or
  // untouched. Nothing is printed here: the failures are thrown at the end as
  // one message, which the tool's main prints once.
  std::vector<std::string> failures;
  std::vector<std::string> written;
  const auto attempt = [&](const std::string& path, const auto& text_of) {
    if (path.empty()) return;
    try {
      write_file_atomically(path, text_of(report));
      written.push_back(path);
    } catch (const std::exception& e) {
      failures.push_back(e.what());
    }
  };
  attempt(options.csv_path, to_csv);
  attempt(options.json_path, to_gbench_json);
  if (!options.quiet) {
    std::cout << to_console_table(report) << std::flush;
    written.push_back("the table");
  }
  if (failures.empty()) return;
  std::string message;
  for (const std::string& failure : failures) message += (message.empty() ? "" : "; ") + failure;
  std::string kept;
  for (const std::string& name : written) kept += (kept.empty() ? "" : ", ") + name;
  message += kept.empty() ? " (no output was written)" : " (written all the same: " + kept + ")";
  throw std::runtime_error(message);
}

}  // namespace redline
