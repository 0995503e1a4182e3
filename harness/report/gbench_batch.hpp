// One batch of cases run through Google Benchmark into a RowCollector, the
// way every redline tool on Google Benchmark runs them: each case registered
// with manual time, one iteration and microseconds (the tool's measurement
// inside the case decides how many samples make its figure), the whole batch
// run `repetitions` times (Ctrl-C stops between repetitions, and a case
// reached after it is skipped: interrupted), and the registry cleared after
// each, so the next batch starts empty.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <string>
#include <vector>

#include "harness/report/gbench_rows.hpp"

namespace redline {

struct GbenchCase {
  std::string name;  // gbench_case_name(family, params)
  std::function<void(benchmark::State&)> run;
};

// One row per case Google Benchmark ran (--benchmark_filter may drop some),
// per repetition, in the order they ran.
std::vector<Row> run_gbench_batch(RowCollector& collector, const std::vector<GbenchCase>& cases, int repetitions);

}  // namespace redline
