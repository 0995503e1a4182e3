#include "collectives/sweep/nccl_table.hpp"

#include <cstdio>

namespace redline {
namespace {

// nccl-tests keeps the time column 7 wide: fewer decimals as it grows.
std::string time_text(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us < 1e4 ? "%7.2f" : us < 1e5 ? "%7.1f" : "%7.0f", us);
  return buf;
}

std::string side_text(const TableSide& side) {
  char buf[96];
  if (!side.skipped.empty()) {
    std::snprintf(buf, sizeof buf, "  %30s", side.skipped.substr(0, 30).c_str());
    return buf;
  }
  const std::string wrong = side.wrong ? std::to_string(*side.wrong) : "N/A";
  std::snprintf(buf, sizeof buf, "  %7s  %6.2f  %6.2f  %5s", time_text(side.time_us).c_str(), side.algbw_GBps,
                side.busbw_GBps, wrong.c_str());
  return buf;
}

}  // namespace

std::string nccl_table_header() {
  return "#                                                              out-of-place                       in-place\n"
         "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
         "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
}

std::string nccl_table_row(std::size_t bytes, std::size_t count, const std::string& type, const std::string& redop,
                           int root, const TableSide& out_of_place, const TableSide& in_place) {
  char head[96];
  std::snprintf(head, sizeof head, "%12zu  %12zu  %8s  %6s  %6d", bytes, count, type.c_str(), redop.c_str(), root);
  return head + side_text(out_of_place) + side_text(in_place) + "\n";
}

}  // namespace redline
