// What every tool's main() shares: the common output flags and the mapping
// of failures to exit statuses (DESIGN: 0 ok, 1 check failed, 2 bad usage,
// 77 cannot run here). CLI11 only collects text; values are validated by the
// harness parsers so every message names the flag and the value.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <set>
#include <string>

#include "harness/report/output.hpp"

namespace redline {

// Adds --csv, --json and --quiet to `app`.
void add_output_flags(CLI::App& app, OutputOptions& output);

// For the few flags whose empty value means something ("--history ''": no
// history); every other flag given '' is refused (exit 2) before `body` runs.
CLI::Option* allow_empty_value(CLI::Option* option);

// The options given on the command line (CLI11's count), by their long name ("--start"): how a
// tool tells a flag left at its default from one typed with the default's value.
std::set<std::string> flags_given(const CLI::App& app);

// Parses argv with `app`, then runs `body`, which returns the exit status.
// UsageError and CLI11 parse errors print "<tool>: <message>" and give 2;
// CannotRun prints "<tool>: skipped: <reason>" and gives 77;
// any other exception prints and gives 1. --help gives 0.
int run_tool(CLI::App& app, int argc, char** argv, const std::function<int()>& body);

}  // namespace redline
