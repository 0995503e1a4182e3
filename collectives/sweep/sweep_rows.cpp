#include "collectives/sweep/sweep_rows.hpp"

#include <cmath>
#include <limits>
#include <tuple>

namespace redline {
namespace {

// The figures every point row carries, measured or not.
constexpr const char* kFigures[] = {"time_us", "algbw_GBps", "busbw_GBps", "wrong"};

Row without_figures(Row row, RowStatus status, const std::string& note) {
  row.status = status;
  row.note = note;
  for (const char* metric : kFigures) row.metric(metric, std::numeric_limits<double>::quiet_NaN());
  return row;
}

}  // namespace

bool SeriesKey::operator<(const SeriesKey& o) const {
  return std::tie(collective, type, op, root) < std::tie(o.collective, o.type, o.op, o.root);
}

std::string SeriesKey::text() const {
  return collective + " " + type + (op == "none" ? "" : " " + op) + (root >= 0 ? " root " + std::to_string(root) : "");
}

SeriesKey series_key(const Collective& collective, DataType type, ReduceOp op, int root_rank) {
  return {std::string(collective.name()), std::string(info(type).name),
          collective.uses_op() ? std::string(to_string(op)) : "none", root_rank};
}

SeriesKey series_of(const Row& row) {
  return {row.param_value("collective").value_or(""), row.param_value("dtype").value_or(""),
          row.param_value("op").value_or(""), std::stoi(row.param_value("root").value_or("-1"))};
}

int group_of(const Row& row) { return std::stoi(row.param_value("group").value_or("0")); }

Row series_row(const Collective& collective, const CollectiveCase& c) {
  Row row;
  row.param("collective", std::string(collective.name()))
      .param("dtype", std::string(info(c.type).name))
      .param("op", collective.uses_op() ? std::string(to_string(c.op)) : "none")
      .param("root", std::to_string(collective.uses_root() ? c.root : -1));
  return row;
}

Row point_row(const Collective& collective, std::size_t bytes, std::size_t count, const CollectiveCase& c,
              bool in_place) {
  Row row;
  row.param("collective", std::string(collective.name()))
      .param("bytes", std::to_string(bytes))
      .param("count", std::to_string(count))
      .param("dtype", std::string(info(c.type).name))
      .param("op", collective.uses_op() ? std::string(to_string(c.op)) : "none")
      .param("root", std::to_string(collective.uses_root() ? c.root : -1))
      .param("inplace", in_place ? "1" : "0");
  return row;
}

Row measured_row(Row row, const GroupResult& g, bool per_iteration, const std::string* group_hosts) {
  if (group_hosts) row.param("group", std::to_string(g.color)).param("group_hosts", *group_hosts);
  row.metric("time_us", g.seconds * 1e6)
      .metric("algbw_GBps", g.algbw)
      .metric("busbw_GBps", g.busbw)
      .metric("wrong", g.checked ? static_cast<double>(g.wrong) : std::nan(""));
  if (per_iteration)
    row.metric("time_p50_us", g.iteration_stats.median * 1e6)
        .metric("time_p99_us", g.iteration_stats.p99 * 1e6)
        .metric("time_max_us", g.iteration_stats.max * 1e6)
        .metric("time_cv", g.iteration_stats.cv);
  if (g.wrong > 0) {
    row.status = RowStatus::wrong;
    row.note = std::to_string(g.wrong) + " elements differ from the expected values";
  }
  return row;
}

Row skipped_row(Row point, const std::string& reason) { return without_figures(std::move(point), RowStatus::skipped, reason); }

Row error_row(Row point, const std::string& what) { return without_figures(std::move(point), RowStatus::error, what); }

Row arrival_row(Row row, const GatheredPoint& gathered, int rank, const std::string& host) {
  const auto r = static_cast<std::size_t>(rank);
  // rank_host, not host: the common host column (rank 0's) is already in every row.
  row.param("rank", std::to_string(rank)).param("rank_host", host);
  row.metric("late_us", gathered.late_s[r] * 1e6).metric("inside_us", gathered.inside_s[r] * 1e6);
  if (gathered.straggler == rank) row.note = "straggler";
  return row;
}

}  // namespace redline
