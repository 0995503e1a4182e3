// The figures the plan takes from other tools' CSVs: a batch sweep's step
// time per micro-batch, and a checkpoint benchmark's stall, restore and async
// save. Which file is which tool's is the caller's business (no room below
// bench/ names a tool); these read columns. Every figure names its file and
// line.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "harness/plan/figure.hpp"
#include "harness/plan/projection.hpp"
#include "harness/report/csv_reader.hpp"

namespace redline {

// ok rows' step_time_ms by batch_size (the median of repeats). Missing
// columns are a UsageError naming `flag` and the file.
std::map<std::int64_t, Figure> read_step_times(const CsvTable& table, const std::string& file, const std::string& flag);

// The ok rows of stage save (the synchronous stall), restore, async.snapshot
// and async.persist (time_s), and the MTBF (mtbf_h) the advice rows used;
// figures the CSV lacks stay unknown. Missing stage/time_s/status columns are
// a UsageError.
CheckpointCosts read_checkpoint_costs(const CsvTable& table, const std::string& file, const std::string& flag);

}  // namespace redline
