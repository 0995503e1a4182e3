// What a collective sweep concludes, computed from its rows alone (no I/O):
// the wrong-value count and average busbw, per series and --split group the
// peak busbw and the saturation size, the acceptance verdict against
// --expect-busbw, the --split groups below the median, and the --per-rank
// stragglers. The table prints its lines; the report keeps its entries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/report/report.hpp"

namespace redline {

struct SummaryOptions {
  bool checked = true;       // -c > 0
  bool single_rank = false;  // one rank: in place moves nothing, so only out of place counts
  bool interrupted = false;  // the sweep stopped early: measuring nothing is then no failure
  std::optional<double> expect_busbw_GBps;
  double outlier_pct = 10;
  bool split = false;     // --split: per group, and the groups compared
  bool per_rank = false;  // --per-rank: the stragglers
};

struct SweepSummary {
  std::vector<std::string> lines;                            // for the console, each a whole line
  std::vector<std::pair<std::string, std::string>> entries;  // for the report's summary
  std::uint64_t wrong = 0;
  bool below_expectation = false;
  bool nothing_measured = false;  // every size skipped: the run fails
};

// `rows`: the sweep's point rows (measured rows out of place and in place, in
// the order measured; skipped and error rows count for nothing);
// `per_rank_rows`: the --per-rank-csv rows.
SweepSummary summarize_sweep(const std::vector<Row>& rows, const std::vector<Row>& per_rank_rows,
                             const SummaryOptions& options);

}  // namespace redline
