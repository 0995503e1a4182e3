// Runs a suite file: each line a tool invocation, each tool a child process
// whose CSV, JSON and output land in results/runs/<run_id>/, with env.json
// and suite.csv beside them; then the run is appended to the history.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "harness/core/environment.hpp"

namespace redline {

struct SuiteEntry {
  std::string name;
  std::vector<std::string> argv;  // program first; shell-style words, quotes honoured
  std::size_t line = 0;
};

// Lines: "NAME PROGRAM [ARGS...]"; # starts a comment; blank lines ignored.
// Throws std::runtime_error naming file:line for a malformed line or a
// duplicate name.
std::vector<SuiteEntry> parse_suite(const std::filesystem::path& suite_file);

// suite.csv's status of an entry not run yet; one still there after the
// suite ended means the suite was killed before it.
inline constexpr const char* kPendingStatus = "pending";

struct SuiteEntryResult {
  std::string name;
  std::string status;  // ok, skipped (exit 77), failed (exit 1), error (anything else); pending in suite.csv
  int exit_code = 0;
  double seconds = 0;
  std::string note;    // the telling line of output when not ok
};

struct SuiteRun {
  std::string run_id;
  std::filesystem::path run_dir;
  std::vector<SuiteEntryResult> entries;
  bool interrupted = false;
  bool any_failed() const;  // failed or error
};

// Why the run folder is not a whole, passing suite run, or "" when it is (or
// holds no suite.csv, so no suite wrote it): the first entry that failed,
// erred, or never ran (the suite interrupted, or killed with it pending).
// Throws CsvError for an unreadable suite.csv.
std::string unfinished_suite_entry(const std::filesystem::path& run_dir);

// `runs_root`/<run_id>/ gets <name>.csv, <name>.json, <name>.log per entry
// (--csv/--json are added before a "--" in the arguments, else at the end),
// plus env.json and suite.csv; `history_csv` gets the run appended (skipped
// when empty). Progress goes to stderr when it is a terminal.
SuiteRun run_suite(const std::vector<SuiteEntry>& entries, const std::filesystem::path& runs_root,
                   const std::filesystem::path& history_csv, const Environment& env);

}  // namespace redline
