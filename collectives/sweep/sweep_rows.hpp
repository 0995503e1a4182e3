// The report rows of a collective sweep: one per point and layout (measured,
// skipped, or the error a failed run ends with) and, for --per-rank-csv, one
// per rank and size. nccl-tests' parameters are the columns.
#pragma once

#include <cstddef>
#include <string>

#include "collectives/ops/collective.hpp"
#include "collectives/sweep/point_results.hpp"
#include "harness/report/report.hpp"

namespace redline {

// A series: one collective, type, op and root, over every size.
struct SeriesKey {
  std::string collective, type, op;  // op "none" for collectives without one
  int root = -1;                     // -1 for collectives without one
  bool operator<(const SeriesKey& other) const;
  // "all_reduce float sum", "broadcast float root 0".
  std::string text() const;
};

// `root_rank`: the series' root, -1 for a collective without one.
SeriesKey series_key(const Collective& collective, DataType type, ReduceOp op, int root_rank);
// The series a row belongs to, from its parameters.
SeriesKey series_of(const Row& row);
// Its --split group (0 without --split).
int group_of(const Row& row);

// A series' parameters (collective, dtype, op, root), for an error in its
// warm-up pass.
Row series_row(const Collective& collective, const CollectiveCase& c);
// A point's parameters, before its figures. `bytes` is the size column (the
// whole array the collective moves); `count` what each rank passes to the call.
Row point_row(const Collective& collective, std::size_t bytes, std::size_t count, const CollectiveCase& c,
              bool in_place);
// The point measured by one group: its figures, and status wrong with a note
// when elements differ. `group_hosts` is set with --split only.
Row measured_row(Row point, const GroupResult& group, bool per_iteration, const std::string* group_hosts);
// Not measured, `reason` in its note; the figures are NaN but present, so a
// file of skipped sizes has the usual columns.
Row skipped_row(Row point, const std::string& reason);
// The run failed in this point (or, with no parameters, before any): status
// error, `what` (which names the rank) in its note.
Row error_row(Row point, const std::string& what);
// --per-rank-csv: one rank's arrival at the point (out of place).
Row arrival_row(Row point, const GatheredPoint& gathered, int rank, const std::string& host);

}  // namespace redline
