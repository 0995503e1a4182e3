// allreduce_bench's engine: for every collective, type, op, root and size it
// measures out-of-place and in-place on every rank, combines the ranks'
// times (-a), verifies (-c), prints the nccl-tests table on rank 0 as rows
// come in, and builds the harness report with the peak, the saturation size,
// per-rank straggler and split-group diagnoses and the acceptance verdict.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "collectives/backend.hpp"
#include "collectives/bootstrap.hpp"
#include "collectives/collective.hpp"
#include "collectives/point_runner.hpp"
#include "collectives/watchdog.hpp"
#include "harness/report/report.hpp"

namespace redline {

enum class AverageMode { rank0 = 0, mean = 1, min = 2, max = 3 };  // nccl-tests' -a

// One time from the ranks' times (in rank order) as -a says: the first
// rank's, the mean, the fastest or the slowest.
double combine_rank_times(const std::vector<double>& times, AverageMode mode);
enum class SplitMode { none, node, pairs };

// Test-only faults (hidden flags), so the fault paths can be tested.
struct FaultInjection {
  int delay_rank = -1;       // sleeps delay_ms before every timed operation
  double delay_ms = 0;
  int hang_rank = -1;        // never reaches the first point of hang_bytes
  std::size_t hang_bytes = 0;
  std::string hang_at;       // or, instead, the point "init" (communicator init), "split" or "warmup" (the first series' pass)
  int exit_rank = -1;        // exits (status 3) at the first point of exit_bytes
  std::size_t exit_bytes = 0;
  bool stuck_abort = false;  // the watchdog's communicator abort never returns (every rank)
  int wrong_rank = -1;       // sends one wrong input element in every check
};

struct CollectiveSweepOptions {
  std::vector<const Collective*> collectives;
  std::vector<DataType> types;
  std::vector<ReduceOp> ops;
  std::vector<int> roots;  // empty: every rank (-r all)
  std::vector<std::size_t> sizes;  // bytes, ascending
  PointSettings point;
  AverageMode average = AverageMode::mean;
  bool per_rank = false;
  double outlier_pct = 10;
  std::optional<double> expect_busbw_GBps;
  SplitMode split = SplitMode::none;
  double timeout_seconds = 600;
  FaultInjection faults;
};

struct CollectiveSweepResult {
  Report report;
  // --per-rank: per size, one row per rank (rank, host, late_us, inside_us),
  // for --per-rank-csv; same environment and run id as `report`.
  Report per_rank;
  std::uint64_t wrong = 0;
  bool below_expectation = false;
  bool nothing_measured = false;  // every size skipped: the run fails (exit 1)
  bool interrupted = false;  // Ctrl-C on any rank: the points so far are reported
};

// Every rank calls this; only rank 0 prints to `out` and gets the rows.
// `hosts` is gather_host_names(bootstrap); `watchdog` watches every point
// (the split, each size) and aborts `backend` and its split on a timeout.
CollectiveSweepResult run_collective_sweep(Bootstrap& bootstrap, Backend& backend,
                                           const CollectiveSweepOptions& options, Environment env, std::ostream& out,
                                           const std::vector<std::string>& hosts, Watchdog& watchdog);

// Host names, one per rank (REDLINE_HOSTNAME overrides gethostname, for
// containers whose host names are not unique).
std::vector<std::string> gather_host_names(Bootstrap& bootstrap);

// "node1: ranks 0-3; node2: ranks 4-7".
std::string describe_hosts(const std::vector<std::string>& hosts);

}  // namespace redline
