// All-reduce bus bandwidth by message size, read from a collective
// benchmark's CSV, and busbw at one size (DDP's bucket) interpolated between
// the two measured sizes around it. Outside the measured sizes it refuses:
// a bandwidth curve bends at both ends (latency below, links above), so
// extrapolating would invent a figure.
#pragma once

#include <string>
#include <vector>

#include "harness/plan/figure.hpp"
#include "harness/report/csv_reader.hpp"

namespace redline {

struct BusbwPoint {
  double bytes = 0;
  double busbw_GBps = 0;  // median of the rows at this size
  std::string lines;      // the CSV lines it came from: "14,16"
};

struct BusbwCurve {
  std::string file;
  std::string dtype;  // the dtype the rows measured
  bool inplace = false;
  std::vector<BusbwPoint> points;  // bytes ascending
};

// An ok all_reduce row over the whole communicator: a --split group's rows
// and the per-rank rows measured a part of it, and would be averaged in.
bool whole_communicator_all_reduce(const CsvTable& table, std::size_t row);

// The ok all_reduce rows (op sum where the CSV says; in-place ones where
// there are any, since DDP all-reduces its buckets in place; one dtype,
// preferring `dtype`, else the first). A missing column or no such row is a
// UsageError naming `flag` and the file.
BusbwCurve read_busbw_curve(const CsvTable& table, const std::string& file, const std::string& flag,
                            const std::string& dtype);

// busbw at `bytes`: exact at a measured size; between two, linear in
// log2(bytes). A size outside the measured range is a UsageError naming
// `size_flag` and the range.
Figure busbw_at(const BusbwCurve& curve, double bytes, const std::string& size_flag, const std::string& size_text);

}  // namespace redline
