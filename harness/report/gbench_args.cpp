#include "harness/report/gbench_args.hpp"

#include <benchmark/benchmark.h>

#include <initializer_list>
#include <regex>
#include <string_view>

#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/output.hpp"

namespace redline {
namespace {

char* kNeutralGoogleFlags[] = {
    const_cast<char*>("--benchmark_out="),
    const_cast<char*>("--benchmark_repetitions=1"),
    const_cast<char*>("--benchmark_list_tests=false"),
    const_cast<char*>("--benchmark_min_warmup_time=0"),
    const_cast<char*>("--benchmark_enable_random_interleaving=false"),
    const_cast<char*>("--benchmark_report_aggregates_only=false"),
    const_cast<char*>("--benchmark_display_aggregates_only=false"),
};

void require_one_of(const std::string& flag, const std::string& value, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return;
    list += std::string(list.empty() ? "" : ", ") + a;
  }
  throw UsageError(flag, value, "must be one of " + list);
}

// Google Benchmark compiles the filter as an extended std::regex; one it
// cannot compile would run nothing, silently.
void require_extended_regex(const std::string& flag, const std::string& value) {
  try {
    std::regex(value, std::regex::extended);
  } catch (const std::regex_error& e) {
    throw UsageError(flag, value, std::string("is not a valid extended regular expression: ") + e.what());
  }
}

void take_benchmark_flag(const std::string& flag, const std::string& value, char* arg, const std::string& tool,
                         BenchmarkArgs& args) {
  if (flag == "--benchmark_filter") {
    require_extended_regex(flag, value);
    args.google.push_back(arg);
  } else if (flag == "--benchmark_counters_tabular") {
    require_one_of(flag, value, {"true", "false", "yes", "no"});
    args.tabular = value == "true" || value == "yes";
  } else if (flag == "--benchmark_color") {
    require_one_of(flag, value, {"true", "false", "yes", "no", "auto"});
    args.color = value;
  } else if (flag == "--benchmark_format") {
    require_one_of(flag, value, {"console", "json"});
    args.format = value;
  } else if (flag == "--benchmark_out_format") {
    require_one_of(flag, value, {"json", "console"});  // Google Benchmark's CSV is deprecated; --csv writes CSV
    args.out_format = value;
  } else if (flag == "--benchmark_out") {
    validate_output_path("--benchmark_out", value);
    args.out = value;
  } else if (flag == "--benchmark_repetitions") {
    args.repetitions = static_cast<int>(parse_count_between("--benchmark_repetitions", value, 1, 1000));
  } else {
    throw UsageError(flag, value,
                     "not taken by " + tool +
                         ", whose own measurement decides warm-up, iterations and time; it takes "
                         "--benchmark_filter, _format, _out, _out_format, _repetitions, _counters_tabular, _color");
  }
}

}  // namespace

std::span<char* const> neutral_google_benchmark_flags() { return kNeutralGoogleFlags; }

BenchmarkArgs split_benchmark_args(int argc, char** argv, const std::string& tool) {
  BenchmarkArgs args;
  args.ours.push_back(argv[0]);
  args.google.push_back(argv[0]);
  for (char* neutral : kNeutralGoogleFlags) args.google.push_back(neutral);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!arg.starts_with("--benchmark_")) {
      args.ours.push_back(argv[i]);
      continue;
    }
    const std::size_t eq = arg.find('=');
    if (eq == std::string_view::npos)
      throw UsageError(std::string(arg), "", "give it as " + std::string(arg) + "=VALUE, as Google Benchmark does");
    // Empty, as any other flag's: Google Benchmark would take it as its default.
    if (eq + 1 == arg.size()) throw empty_value_error(std::string(arg.substr(0, eq)));
    take_benchmark_flag(std::string(arg.substr(0, eq)), std::string(arg.substr(eq + 1)), argv[i], tool, args);
  }
  return args;
}

void initialize_google_benchmark(BenchmarkArgs& args) {
  int google_argc = static_cast<int>(args.google.size());
  benchmark::Initialize(&google_argc, args.google.data());
  if (google_argc > 1) throw UsageError(std::string("Google Benchmark did not accept ") + args.google[1]);
}

}  // namespace redline
