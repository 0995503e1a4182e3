// A point's results from every rank, gathered to rank 0 and combined per
// --split group: one time per group as -a says, the bandwidths, the wrong
// count, --per-iter statistics, and the --per-rank arrival diagnosis.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectives/bootstrap/bootstrap.hpp"
#include "collectives/ops/collective.hpp"
#include "collectives/sweep/point_runner.hpp"
#include "harness/measure/stats.hpp"

namespace redline {

enum class AverageMode { rank0 = 0, mean = 1, min = 2, max = 3 };  // nccl-tests' -a

// One time from the ranks' times (in rank order) as -a says: the first
// rank's, the mean, the fastest or the slowest.
double combine_rank_times(const std::vector<double>& times, AverageMode mode);

// A point's result for one group of ranks (the whole world without --split).
struct GroupResult {
  int color = 0;
  std::vector<int> ranks;
  double seconds = 0;  // combined per -a
  std::uint64_t wrong = 0;
  bool checked = false;
  double algbw = 0, busbw = 0;
  Summary iteration_stats;  // --per-iter: per operation, slowest rank
};

// A point as rank 0 sees it: every group's result and the arrival diagnosis.
struct GatheredPoint {
  bool interrupted = false;  // on any rank: every rank stops after this point
  std::vector<GroupResult> groups;
  std::string arrival;           // --per-rank: the slowest ranks, one line
  std::optional<int> straggler;  // --per-rank: the rank that arrives last, when beyond the outlier threshold
  std::vector<double> late_s;    // --per-rank, per rank: how much later than the earliest it arrived
  std::vector<double> inside_s;  // --per-rank, per rank: mean time inside one operation
};

struct GatherSettings {
  AverageMode average = AverageMode::mean;
  bool per_iteration = false;
  bool per_rank = false;
  double outlier_pct = 10;
  int local_ranks = 1;  // ranks each process drives (-g)
};

// Collective: every rank passes its measurement of the point (`bytes` as the
// table's size column), its --split group (negative: none, it sat the point
// out) and whether it was interrupted;
// every rank learns whether any was, and rank 0 gets the rest.
GatheredPoint gather_point(Bootstrap& bootstrap, const PointMeasurement& m, const std::vector<int>& colors,
                           bool interrupted_here, const Collective& collective, std::size_t bytes,
                           const std::vector<std::string>& hosts, const GatherSettings& settings);

}  // namespace redline
