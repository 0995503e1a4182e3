// The --benchmark_* flags a redline tool built on Google Benchmark takes,
// with Google Benchmark's meanings. Google Benchmark runs the cases, but the
// tool's own measurement decides warm-up, iterations and time, and the tool
// repeats and reports the batches, so only these are accepted; the rest would
// either do nothing or run each case's whole measurement again.
//   --benchmark_filter=REGEX          passed to Google Benchmark
//   --benchmark_counters_tabular=B, --benchmark_color=B   for the console report
//   --benchmark_format=console|json   Google Benchmark's report on stdout
//   --benchmark_out=FILE, --benchmark_out_format=json|console (written at the end, atomically)
//   --benchmark_repetitions=N         whole batches, N times
// A bad value is a UsageError naming the flag and the value (exit 2).
#pragma once

#include <span>
#include <string>
#include <vector>

namespace redline {

struct BenchmarkArgs {
  // argv split in two, each starting with argv[0]: the tool's own flags, and
  // what Google Benchmark is initialized with (the neutral flags, then the
  // user's --benchmark_filter).
  std::vector<char*> ours, google;
  std::string format;             // --benchmark_format; empty: no Google Benchmark report on stdout
  std::string out;                // --benchmark_out
  std::string out_format = "json";
  std::string color = "auto";     // --benchmark_color, for the console report on stdout
  bool tabular = false;           // --benchmark_counters_tabular
  int repetitions = 1;            // --benchmark_repetitions
};

// Checks every --benchmark_* flag of argv (given as --benchmark_x=VALUE) and
// splits argv. `tool` names the tool in the message for a flag it does not take.
BenchmarkArgs split_benchmark_args(int argc, char** argv, const std::string& tool);

// Google Benchmark also reads BENCHMARK_* environment variables; these flags
// keep the ones that would bypass the list above (its own repetitions,
// output file, listing instead of running) at their neutral values. They
// come first in BenchmarkArgs::google, so the user's --benchmark_filter still
// applies.
std::span<char* const> neutral_google_benchmark_flags();

// benchmark::Initialize with args.google; a flag it leaves unread is a UsageError.
void initialize_google_benchmark(BenchmarkArgs& args);

}  // namespace redline
