#include "harness/report/gbench_batch.hpp"

#include <algorithm>
#include <utility>

#include "harness/core/interrupt.hpp"

namespace redline {
namespace {

// Runs what is registered and clears the registry. With nothing registered
// nothing runs, so Google Benchmark does not report an empty match.
std::vector<Row> run_registered(RowCollector& collector, std::size_t registered, int repetition, int repetitions) {
  // Cleared on every path: the registered lambdas refer to the caller's
  // cases, which a throw would leave behind for the next batch to run.
  struct ClearOnExit {
    ~ClearOnExit() { benchmark::ClearRegisteredBenchmarks(); }
  } clear_on_exit;
  if (registered > 0) {
    collector.set_repetition(repetition, repetitions);
    benchmark::RunSpecifiedBenchmarks(&collector);
  }
  return collector.take_rows();
}

}  // namespace

std::vector<Row> run_gbench_batch(RowCollector& collector, const std::vector<GbenchCase>& cases, int repetitions) {
  repetitions = std::max(1, repetitions);
  std::vector<Row> rows;
  for (int repetition = 0; repetition < repetitions && !interrupted(); ++repetition) {
    for (const GbenchCase& c : cases)
      benchmark::RegisterBenchmark(c.name.c_str(),
                                   [&c](benchmark::State& state) {
                                     if (interrupted()) {
                                       state.SkipWithError("skipped: interrupted");
                                       return;
                                     }
                                     c.run(state);
                                   })
          ->UseManualTime()
          ->Iterations(1)
          ->Unit(benchmark::kMicrosecond);
    for (Row& row : run_registered(collector, cases.size(), repetition, repetitions)) rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace redline
