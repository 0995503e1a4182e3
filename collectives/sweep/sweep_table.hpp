// The console side of a collective sweep, on rank 0: nccl-tests' table line
// for line, and redline's lines around it (the run's header, skip reasons,
// per-iteration and arrival lines, the summary). It prints; it decides nothing.
#pragma once

#include <cstddef>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/ops/data_type.hpp"
#include "collectives/sweep/point_results.hpp"
#include "collectives/bootstrap/rank_hosts.hpp"
#include "collectives/sweep/sweep_rows.hpp"
#include "collectives/sweep/sweep_summary.hpp"
#include "harness/core/environment.hpp"

namespace redline {

// What the table's header says about the run.
struct SweepHeader {
  std::string tool;
  std::string backend, bootstrap;
  int ranks = 1;
  std::string hosts;                    // describe_hosts
  std::vector<DataType> checked_types;  // empty with -c 0
  SplitMode split = SplitMode::none;
};

class SweepTable {
 public:
  // `group_hosts`: each --split group's hosts, named on its lines.
  SweepTable(std::ostream& out, std::map<int, std::string> group_hosts, bool split);

  // The libraries that move the data and the variables that steer them are
  // in it too: they change the figures.
  void header(const SweepHeader& header, const Environment& env);
  void collective(std::string_view name);
  // A size not measured; its reason once per series, not under every size.
  void skipped(std::size_t bytes, std::size_t count, const SeriesKey& key, const std::string& reason);
  // A measured size: out of place (sides[0]) and in place (sides[1]), a line per group.
  void measured(std::size_t bytes, std::size_t count, const SeriesKey& key, const GatheredPoint (&sides)[2],
                bool per_iteration, bool per_rank);
  void interrupted();
  void summary(const SweepSummary& summary);

 private:
  std::ostream& out_;
  std::map<int, std::string> group_hosts_;
  bool split_;
  std::map<SeriesKey, std::set<std::string>> skip_reasons_;  // already said
};

}  // namespace redline
