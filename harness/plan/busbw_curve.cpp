#include "harness/plan/busbw_curve.hpp"

#include <map>

#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/measure/size_curve.hpp"
#include "harness/measure/stats.hpp"
#include "harness/plan/csv_cells.hpp"

namespace redline {
namespace {

bool wanted_row(const CsvTable& t, std::size_t r) {
  return whole_communicator_all_reduce(t, r) && (!t.column("op") || t.value(r, "op") == "sum");
}

// The dtype to read: the preferred one when measured, else the first seen.
std::string chosen_dtype(const CsvTable& t, const std::string& preferred) {
  std::string first;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (!wanted_row(t, r)) continue;
    const std::string& d = t.value(r, "dtype");
    if (d == preferred) return d;
    if (first.empty()) first = d;
  }
  return first;
}

}  // namespace

bool whole_communicator_all_reduce(const CsvTable& t, std::size_t r) {
  return t.value(r, "collective") == "all_reduce" && t.value(r, "status") == "ok" && t.value(r, "group").empty() &&
         t.value(r, "rank").empty();
}

BusbwCurve read_busbw_curve(const CsvTable& t, const std::string& file, const std::string& flag,
                            const std::string& dtype) {
  require_columns(t, file, flag, {"collective", "bytes", "busbw_GBps", "status"}, "an all-reduce sweep's CSV has them");
  BusbwCurve curve{file, chosen_dtype(t, dtype), false, {}};
  for (std::size_t r = 0; r < t.rows.size() && !curve.inplace; ++r)
    curve.inplace = wanted_row(t, r) && t.value(r, "inplace") == "1";
  std::map<double, std::pair<std::vector<double>, std::string>> by_size;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (!wanted_row(t, r) || t.value(r, "dtype") != curve.dtype) continue;
    if (curve.inplace != (t.value(r, "inplace") == "1")) continue;
    auto& [values, lines] = by_size[cell_number(t, r, "bytes", file, flag)];
    values.push_back(cell_number(t, r, "busbw_GBps", file, flag));
    if (!lines.empty()) lines += ',';
    lines += std::to_string(t.row_lines[r]);
  }
  for (const auto& [bytes, entry] : by_size) curve.points.push_back({bytes, summarize(entry.first).median, entry.second});
  if (curve.points.empty()) throw UsageError(flag, file, "has no ok all_reduce row to read busbw from");
  return curve;
}

Figure busbw_at(const BusbwCurve& c, double bytes, const std::string& size_flag, const std::string& size_text) {
  const auto& pts = c.points;
  const std::string where = c.file + " (all_reduce " + c.dtype + (c.inplace ? " in place" : " out of place");
  std::vector<ThroughputPoint> sizes;
  for (const BusbwPoint& p : pts) sizes.push_back({p.bytes, p.busbw_GBps});
  const auto r = read_at_size(sizes, bytes);
  if (!r)
    throw UsageError(size_flag, size_text,
                     "the all-reduce message of " + format_number(bytes, 0) + " bytes is outside the sizes " + c.file +
                         " measured (" + format_size(static_cast<std::uint64_t>(pts.front().bytes)) + " to " +
                         format_size(static_cast<std::uint64_t>(pts.back().bytes)) +
                         "): measure the all-reduce up to it, or give --busbw");
  const BusbwPoint &lo = pts[r->below], &hi = pts[r->above];
  if (r->below == r->above) return {hi.busbw_GBps, where + ", line " + hi.lines + ", at " + format_size(static_cast<std::uint64_t>(bytes)) + ")"};
  return {r->value, where + ", lines " + lo.lines + " and " + hi.lines + ": " + format_number(lo.busbw_GBps, 2) +
                       " GB/s at " + format_size(static_cast<std::uint64_t>(lo.bytes)) + ", " +
                       format_number(hi.busbw_GBps, 2) + " GB/s at " + format_size(static_cast<std::uint64_t>(hi.bytes)) +
                       ", linear in log2(bytes))"};
}

}  // namespace redline
