#include "harness/report/tool_main.hpp"

#include <iostream>
#include <set>

#include "harness/core/interrupt.hpp"
#include "harness/core/usage_error.hpp"

namespace redline {

void add_output_flags(CLI::App& app, OutputOptions& output) {
  app.add_option("--csv", output.csv_path, "Write the results as CSV to FILE (atomically)")->type_name("FILE");
  app.add_option("--json", output.json_path, "Write the results as Google Benchmark JSON to FILE")->type_name("FILE");
  app.add_flag("--quiet", output.quiet, "Do not print the results table");
}

namespace {

std::set<const CLI::Option*>& options_taking_empty_values() {
  static std::set<const CLI::Option*> options;
  return options;
}

// A flag given an empty value ("--gpu ''") would read as a flag left out, so
// the user's intent would pass unnoticed: refuse it, in every subcommand.
void refuse_empty_values(const CLI::App& app) {
  for (const CLI::Option* option : app.get_options()) {
    if (!option->nonpositional() || option->count() == 0 || options_taking_empty_values().count(option)) continue;
    for (const std::string& value : option->results())
      if (value.empty())
        throw empty_value_error(option->get_name(false, true));
  }
  for (const CLI::App* command : app.get_subcommands()) refuse_empty_values(*command);
}

}  // namespace

CLI::Option* allow_empty_value(CLI::Option* option) {
  options_taking_empty_values().insert(option);
  return option;
}

std::set<std::string> flags_given(const CLI::App& app) {
  std::set<std::string> given;
  for (const CLI::Option* option : app.get_options())
    if (option->nonpositional() && option->count() > 0) given.insert(option->get_name());
  return given;
}

int run_tool(CLI::App& app, int argc, char** argv, const std::function<int()>& body) {
  const std::string tool = app.get_name();
  // CLI11 says only "A subcommand is required" for a mistyped one: name it.
  const auto commands = app.get_subcommands([](const CLI::App*) { return true; });
  if (!commands.empty() && argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const CLI::App* command : commands) {
      found = found || command->get_name() == argv[1];
      known += (known.empty() ? "" : ", ") + command->get_name();
    }
    if (!found) {
      std::cerr << tool << ": " << UsageError("COMMAND", argv[1], "unknown; use one of " + known).what() << '\n';
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line: a suite's index and a launcher's log keep a failure's last
    // line, which must be the problem, not the hint.
    std::cerr << tool << ": " << e.what() << " (run '" << tool << " --help' for the flags)\n";
    return kExitUsage;
  }
  try {
    refuse_empty_values(app);
    install_interrupt_handlers();
    return body();
  } catch (const UsageError& e) {
    std::cerr << tool << ": " << e.what() << '\n';
    return kExitUsage;
  } catch (const CannotRun& e) {
    std::cerr << tool << ": skipped: " << e.what() << '\n';
    return kExitCannotRun;
  } catch (const std::exception& e) {
    std::cerr << tool << ": error: " << e.what() << '\n';
    return kExitCheckFailed;
  }
}

}  // namespace redline
