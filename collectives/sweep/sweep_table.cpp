#include "collectives/sweep/sweep_table.hpp"

#include "collectives/sweep/nccl_table.hpp"
#include "collectives/ops/verify.hpp"
#include "harness/core/units.hpp"
#include "harness/report/console_table.hpp"

namespace redline {
namespace {

TableSide table_side(const GroupResult& g) {
  TableSide side;
  side.time_us = g.seconds * 1e6;
  side.algbw_GBps = g.algbw;
  side.busbw_GBps = g.busbw;
  if (g.checked) side.wrong = g.wrong;
  return side;
}

std::string iteration_line(const char* layout, const Summary& stats) {
  return std::string("#   per-iteration ") + layout + ": p50 " + human_number(stats.median * 1e6) + " us, p99 " +
         human_number(stats.p99 * 1e6) + " us, max " + human_number(stats.max * 1e6) + " us, CV " +
         format_number(100 * stats.cv, 1) + "%\n";
}

}  // namespace

SweepTable::SweepTable(std::ostream& out, std::map<int, std::string> group_hosts, bool split)
    : out_(out), group_hosts_(std::move(group_hosts)), split_(split) {}

void SweepTable::header(const SweepHeader& h, const Environment& env) {
  out_ << "# redline " << h.tool << ": backend " << h.backend << ", bootstrap " << h.bootstrap << ", " << h.ranks
       << " ranks\n# hosts: " << h.hosts << "\n";
  if (!env.nccl_version.empty()) out_ << "# NCCL " << env.nccl_version << "\n";
  if (!env.mpi_library.empty()) out_ << "# MPI " << env.mpi_library << "\n";
  for (const auto& [name, value] : env.variables)
    if (steers_communication(name)) out_ << "# " << name << "=" << value << "\n";
  for (DataType type : h.checked_types)
    if (info(type).is_floating) out_ << "# check: " << tolerance_statement(type) << "\n";
  if (h.ranks == 1)
    out_ << "# world size 1: nothing crosses a link, so busbw factors that scale with (n-1)/n are 0, and an"
            " in-place operation moves nothing (the peak counts out-of-place only);"
            " launch one rank per GPU (mpirun -np N) to measure a fabric\n";
  if (h.split == SplitMode::automatic)
    out_ << "# --split auto: rounds of groups (inside each node, pairs, new pairs, then each finding again alone);"
            " a node or link is named only when its finding reproduces\n";
  else if (h.split != SplitMode::none)
    out_ << "# --split " << (h.split == SplitMode::node ? "node" : "pairs")
         << ": every group runs at the same time; the last column names the group\n";
  out_ << std::flush;
}

void SweepTable::collective(std::string_view name) {
  out_ << "#\n# " << name << "\n" << nccl_table_header() << std::flush;
}

void SweepTable::skipped(std::size_t bytes, std::size_t count, const SeriesKey& key, const std::string& reason) {
  TableSide side;
  side.skipped = "skipped";
  out_ << nccl_table_row(bytes, count, key.type, key.op, key.root, side, side);
  if (skip_reasons_[key].insert(reason).second) out_ << "#  " << key.text() << " skipped: " << reason << "\n";
  out_ << std::flush;
}

void SweepTable::measured(std::size_t bytes, std::size_t count, const SeriesKey& key, const GatheredPoint (&sides)[2],
                          bool per_iteration, bool per_rank) {
  for (std::size_t g = 0; g < sides[0].groups.size(); ++g) {
    const GroupResult& oop = sides[0].groups[g];
    std::string line =
        nccl_table_row(bytes, count, key.type, key.op, key.root, table_side(oop), table_side(sides[1].groups[g]));
    if (split_) {
      line.pop_back();
      line += "  group " + std::to_string(oop.color) + " (" + group_hosts_[oop.color] + ")\n";
    }
    out_ << line;
  }
  if (per_iteration)
    for (const int side : {0, 1})
      for (const GroupResult& g : sides[side].groups)
        out_ << iteration_line(side ? "in-place" : "out-of-place", g.iteration_stats);
  if (per_rank) out_ << sides[0].arrival << "\n";
  out_ << std::flush;
}

void SweepTable::interrupted() { out_ << "# interrupted: reporting the sizes measured so far\n" << std::flush; }

void SweepTable::summary(const SweepSummary& summary) {
  for (const std::string& line : summary.lines) out_ << line << "\n";
  out_ << std::flush;
}

}  // namespace redline
