// The collectives tool's engine, the sweep loop: for every collective, type, op,
// root and size it measures out of place and in place on every rank, under
// the watchdog, and hands the rows to the record and the lines to the table
// (on rank 0). The conclusions come from sweep_summary.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "collectives/backends/backend.hpp"
#include "collectives/bootstrap/bootstrap.hpp"
#include "collectives/ops/collective.hpp"
#include "collectives/faults/fault_hooks.hpp"
#include "collectives/sweep/point_results.hpp"
#include "collectives/sweep/point_runner.hpp"
#include "collectives/bootstrap/rank_hosts.hpp"
#include "collectives/sweep/sweep_record.hpp"
#include "collectives/watchdog/watchdog.hpp"

namespace redline {

struct CollectiveSweepOptions {
  std::string tool;  // names the run in the table's header
  std::vector<const Collective*> collectives;
  std::vector<DataType> types;
  std::vector<ReduceOp> ops;
  std::vector<int> roots;          // empty: every rank (-r all)
  std::vector<std::size_t> sizes;  // bytes, ascending
  PointSettings point;
  AverageMode average = AverageMode::mean;
  bool per_rank = false;
  double outlier_pct = 10;
  std::optional<double> expect_busbw_GBps;
  SplitMode split = SplitMode::none;
  double timeout_seconds = 600;
};

// The run's verdict, the same on every rank.
struct CollectiveSweepResult {
  std::uint64_t wrong = 0;
  bool below_expectation = false;
  bool nothing_measured = false;  // every size skipped: the run fails (exit 1)
  bool interrupted = false;       // Ctrl-C on any rank: the points so far are reported
  bool named_culprit = false;     // --split auto named a node or a link: the check failed (exit 1)
};

// What a sweep runs on besides its options.
struct SweepServices {
  Bootstrap& bootstrap;
  Backend& backend;  // the world communicator
  Watchdog& watchdog;
  FaultHooks& faults;
  SweepRecord& record;                    // the rows, kept on rank 0
  std::ostream& out;                      // rank 0's table
  const std::vector<std::string>& hosts;  // gather_host_names
};

// Every rank calls this. The watchdog watches every point (the --split
// split, each series' warm-up, each size) and aborts the communicators on a
// timeout. Throws UsageError, the same on every rank, for --split groups or
// roots that cannot work.
// Gives the watchdog back the world's abort alone when it goes, on every way
// out: declared after a group communicator's abort was handed over, it takes
// that back before the group communicator is destroyed.
struct AbortWorldOnlyOnExit {
  SweepServices& services;
  ~AbortWorldOnlyOnExit() {
    services.watchdog.set_abort_operations([&world = services.backend] { world.abort(); });
  }
};

// With --split auto, the diagnosis rounds (split_auto.hpp) instead of the sweep.
CollectiveSweepResult run_collective_sweep(const CollectiveSweepOptions& options, SweepServices& services);

class SweepTable;
// The run's summary entries (backend, ranks, hosts) and, on rank 0 (`table`
// set), the table's header.
void start_sweep_report(const CollectiveSweepOptions& options, SweepServices& services, SweepTable* table);

}  // namespace redline
