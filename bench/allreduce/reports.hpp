// Rank 0's report files of a run, what is saved when the run fails, and the
// exit status every rank ends with.
#pragma once

#include <string>

#include "bench/allreduce/flags.hpp"
#include "collectives/bootstrap/bootstrap.hpp"
#include "collectives/sweep/collective_sweep.hpp"
#include "collectives/sweep/sweep_record.hpp"

namespace redline::allreduce {

// Only rank 0 writes the reports, so only its file system is asked whether
// they can be written; every rank learns the verdict and throws alike.
void check_outputs_on_rank0(Bootstrap& bootstrap, const Flags& f);

// Whether --csv, --json or --per-rank-csv asks for a file.
bool writes_files(const Flags& f);

// Rank 0's files: the report (its table was the console's), and the
// --per-rank-csv companion.
SweepRecord::Save save_to_files(const Flags& f);

// The run failed: rank 0 saves what was measured and an error row naming the
// rank and the point, before the run is aborted (once, and said when it saves).
void save_after_failure(const Flags& f, SweepRecord& record, const std::string& what);

// Rank 0 writes the report; with --quiet, what failed still reaches stderr.
// The exit status, the same on every rank.
int finish(const Flags& f, Bootstrap& bootstrap, SweepRecord& record, const CollectiveSweepResult& result);

}  // namespace redline::allreduce
