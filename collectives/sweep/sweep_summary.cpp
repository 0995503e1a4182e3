#include "collectives/sweep/sweep_summary.hpp"

#include <cmath>
#include <map>
#include <tuple>

#include "collectives/sweep/sweep_rows.hpp"
#include "harness/core/units.hpp"
#include "harness/measure/saturation.hpp"
#include "harness/measure/stats.hpp"

namespace redline {
namespace {

struct SeriesPoint {
  std::size_t bytes;
  int color;
  double busbw;  // the better of out-of-place and in-place (out of place alone on one rank)
};

// The measured rows as points: series -> points in the order measured.
struct Measured {
  std::map<SeriesKey, std::vector<SeriesPoint>> series;
  std::map<int, std::string> group_hosts;  // --split: group -> "a+b"
  std::uint64_t wrong = 0;
  double busbw_sum = 0;
  std::size_t busbw_n = 0;
};

Measured read_rows(const std::vector<Row>& rows, bool single_rank) {
  Measured m;
  std::map<std::tuple<SeriesKey, int, std::string>, double> out_of_place;  // waiting for their in-place row
  for (const Row& row : rows) {
    const double busbw = row.metric_value("busbw_GBps").value_or(NAN);
    if (std::isfinite(busbw)) {
      m.busbw_sum += busbw;
      ++m.busbw_n;
    }
    if (row.status != RowStatus::ok && row.status != RowStatus::wrong) continue;
    const double wrong = row.metric_value("wrong").value_or(NAN);
    if (std::isfinite(wrong)) m.wrong += static_cast<std::uint64_t>(wrong);
    const SeriesKey key = series_of(row);
    const int color = group_of(row);
    if (const auto hosts = row.param_value("group_hosts")) m.group_hosts[color] = *hosts;
    const std::string bytes = row.param_value("bytes").value_or("0");
    if (row.param_value("inplace") != "1") {
      out_of_place[{key, color, bytes}] = busbw;
      continue;
    }
    const double oop = out_of_place[{key, color, bytes}];
    m.series[key].push_back({std::stoull(bytes), color, single_rank ? oop : std::max(oop, busbw)});
  }
  return m;
}

void add(SweepSummary& s, std::string key, std::string value) {
  s.entries.emplace_back(std::move(key), std::move(value));
}

// The wrong count, the average busbw, and a run that measured nothing.
void summarize_totals(const Measured& m, const SummaryOptions& o, SweepSummary& s) {
  s.wrong = m.wrong;
  if (m.series.empty())
    s.lines.push_back("# Out of bounds values : N/A (nothing measured)");
  else if (o.checked)
    s.lines.push_back("# Out of bounds values : " + std::to_string(m.wrong) + (m.wrong ? " ERROR" : " OK"));
  else
    s.lines.push_back("# Out of bounds values : N/A (-c 0: not checked)");
  // Nothing measured has no average: N/A, never a 0 that reads as measured.
  const std::string avg_busbw = m.busbw_n ? format_number(m.busbw_sum / m.busbw_n, 4) : "N/A (nothing measured)";
  s.lines.push_back("# Avg bus bandwidth    : " + avg_busbw);
  s.lines.push_back("#");
  add(s, "wrong_values", std::to_string(m.wrong));
  if (m.busbw_n) add(s, "avg_busbw_GBps", avg_busbw);
  if (!m.series.empty()) return;
  if (!o.interrupted) {
    // Every size skipped: no result is a failed run, never a quiet pass.
    s.nothing_measured = true;
    s.lines.push_back("# FAILED: nothing was measured (every size skipped; the reasons are above)");
    add(s, "result", "FAILED: nothing was measured");
  }
  if (o.expect_busbw_GBps) {
    // Nothing measured is no evidence of bandwidth: never a silent pass.
    s.below_expectation = true;
    s.lines.push_back("# FAILED: --expect-busbw " + format_general(*o.expect_busbw_GBps, 6) +
                      ": no size was measured (all skipped)");
    add(s, "acceptance", "FAILED: nothing was measured");
  }
}

// The saturation size in words: the harness's saturation point (the plateau,
// never below 90% of the peak), or why there is none and where 90% of the
// peak was reached.
std::string saturation_size_text(const Saturation& sat) {
  const std::string reason = plateau_reason(sat, SaturationOptions{}, "size",
                                            [](double bytes) { return format_size(static_cast<std::uint64_t>(bytes)); });
  if (sat.point)
    return format_size(static_cast<std::uint64_t>(sat.point->size)) + " (" + format_significant(sat.point->throughput, 3) +
           " GB/s; " + reason + ")";
  return "not reached (" + reason + "; 90% of peak at " + format_size(static_cast<std::uint64_t>(sat.fraction->size)) +
         ", " + format_significant(sat.fraction->throughput, 3) + " GB/s)";
}

// One curve (a series, or one --split group of it): its peak, saturation
// size and verdict. A slow node in any group must not pass acceptance.
void summarize_curve(const std::string& name, const std::vector<ThroughputPoint>& curve, const SummaryOptions& o,
                     SweepSummary& s) {
  const Saturation sat = analyze_saturation(curve);
  if (!sat.best) return;
  const std::string peak = sat.fraction ? format_significant(sat.best->throughput, 3) + " GB/s at " +
                                              format_size(static_cast<std::uint64_t>(sat.best->size))
                                        : std::string("0 GB/s (its busbw factor is 0 at this world size)");
  if (sat.fraction) {
    const std::string saturation = saturation_size_text(sat);
    s.lines.push_back("# " + name + ": peak busbw " + peak + "; saturation size " + saturation);
    add(s, "saturation_size " + name, saturation);
  } else {  // a busbw factor of 0 (world size 1): see analyze_saturation
    s.lines.push_back("# " + name + ": peak busbw " + peak + "; no saturation size");
  }
  add(s, "peak_busbw " + name, peak);
  if (!o.expect_busbw_GBps) return;
  const bool below = sat.best->throughput < *o.expect_busbw_GBps;
  s.below_expectation = s.below_expectation || below;
  const std::string text = std::string(below ? "FAILED: " : "PASSED: ") + name + " peak busbw " +
                           format_significant(sat.best->throughput, 3) + " GB/s " + (below ? "is below" : ">=") +
                           " --expect-busbw " + format_general(*o.expect_busbw_GBps, 6);
  s.lines.push_back("# " + text);
  add(s, "acceptance " + name, below ? text : "PASSED");
}

// --split: per size, the groups more than --outlier below the median group.
void summarize_slow_groups(const SeriesKey& key, const std::vector<SeriesPoint>& points, const Measured& m,
                           const SummaryOptions& o, SweepSummary& s) {
  std::map<std::size_t, std::vector<const SeriesPoint*>> by_size;
  for (const auto& p : points) by_size[p.bytes].push_back(&p);
  std::map<int, int> slow_sizes;
  for (const auto& [bytes, group_points] : by_size) {
    std::vector<double> values;
    for (const auto* p : group_points) values.push_back(p->busbw);
    const double median = summarize(values).median;
    for (const auto* p : group_points)
      if (p->busbw < median * (1 - o.outlier_pct / 100.0)) ++slow_sizes[p->color];
  }
  std::string slow;
  for (const auto& [color, n] : slow_sizes)
    slow += (slow.empty() ? "" : "; ") + std::string("group ") + std::to_string(color) + " (" +
            m.group_hosts.at(color) + ") at " + std::to_string(n) + " of " + std::to_string(by_size.size()) + " sizes";
  const std::string text = slow.empty() ? "none" : slow;
  s.lines.push_back("# " + key.text() + ": groups more than " + format_number(o.outlier_pct, 0) +
                    "% below the median busbw: " + text);
  add(s, "slow_groups " + key.text(), text);
}

// --per-rank: how often each rank arrived last by a clear margin.
void summarize_stragglers(const std::vector<Row>& per_rank_rows, const SummaryOptions& o, SweepSummary& s) {
  std::map<int, std::pair<std::string, int>> sizes;  // rank -> (host, sizes where it straggled)
  for (const Row& row : per_rank_rows)
    if (row.note == "straggler") {
      auto& [host, n] = sizes[std::stoi(row.param_value("rank").value_or("0"))];
      host = row.param_value("rank_host").value_or("?");
      ++n;
    }
  std::string text;
  for (const auto& [rank, host_n] : sizes)
    text += (text.empty() ? "" : "; ") + std::string("rank ") + std::to_string(rank) + " (" + host_n.first + ") at " +
            std::to_string(host_n.second) + " sizes";
  s.lines.push_back("# stragglers (arrive last by more than " + format_number(o.outlier_pct, 0) +
                    "% of the time in the operation): " + (text.empty() ? "none" : text));
  add(s, "stragglers", text.empty() ? "none" : text);
}

}  // namespace

SweepSummary summarize_sweep(const std::vector<Row>& rows, const std::vector<Row>& per_rank_rows,
                             const SummaryOptions& options) {
  const Measured m = read_rows(rows, options.single_rank);
  SweepSummary s;
  summarize_totals(m, options, s);
  for (const auto& [key, points] : m.series) {
    std::map<int, std::vector<ThroughputPoint>> curves;
    for (const auto& p : points) curves[p.color].push_back({static_cast<double>(p.bytes), p.busbw});
    for (const auto& [color, curve] : curves) {
      const std::string name =
          key.text() + (options.split ? " group " + std::to_string(color) + " (" + m.group_hosts.at(color) + ")" : "");
      summarize_curve(name, curve, options, s);
    }
    if (options.split) summarize_slow_groups(key, points, m, options, s);
  }
  if (options.per_rank) summarize_stragglers(per_rank_rows, options, s);
  return s;
}

}  // namespace redline
