// The console table nccl-tests users read every day, line for line: size,
// count, type, redop, root, then time, algbw, busbw and #wrong for
// out-of-place and in-place. Pure formatting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace redline {

struct TableSide {
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::optional<std::uint64_t> wrong;  // empty: not checked (-c 0), printed N/A
  std::string skipped;                 // non-empty: the side did not run (printed instead)
};

std::string nccl_table_header();
std::string nccl_table_row(std::size_t bytes, std::size_t count, const std::string& type, const std::string& redop,
                           int root, const TableSide& out_of_place, const TableSide& in_place);

}  // namespace redline
