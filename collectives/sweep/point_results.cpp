#include "collectives/sweep/point_results.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "harness/report/console_table.hpp"

namespace redline {
namespace {

// What each rank contributes after a point (fixed size for all_gather).
struct RankResult {
  double seconds = 0;
  double seconds_in_operation = 0;
  std::uint64_t wrong = 0;
  std::int32_t checked = 0;
  std::int32_t color = 0;        // split group
  std::int32_t interrupted = 0;  // this rank got Ctrl-C
};

// --per-rank: the rank that arrives last spends the least time inside the
// operation, since everyone else waits there for it. Its lateness is the
// longest time inside minus its own.
void diagnose_arrival(const std::vector<RankResult>& results, const std::vector<std::string>& hosts, double outlier_pct,
                      GatheredPoint& point) {
  double longest = 0;
  for (const auto& r : results) {
    longest = std::max(longest, r.seconds_in_operation);
    point.inside_s.push_back(r.seconds_in_operation);
  }
  std::vector<std::pair<double, int>> lateness;
  for (int r = 0; r < static_cast<int>(results.size()); ++r) {
    lateness.emplace_back(longest - results[r].seconds_in_operation, r);
    point.late_s.push_back(longest - results[r].seconds_in_operation);
  }
  std::sort(lateness.rbegin(), lateness.rend());
  point.arrival = "#   per-rank arrival, latest first:";
  for (std::size_t k = 0; k < lateness.size() && k < 3; ++k)
    point.arrival += (k ? "; " : " ") + std::string("rank ") + std::to_string(lateness[k].second) + " (" +
                     hosts[lateness[k].second] + ") " + human_number(lateness[k].first * 1e6) + " us late";
  // A straggler stands out: late by more than --outlier of the time inside
  // an operation, by at least 20 us (below that it is scheduling noise), and
  // by at least twice the next latest rank (else no single rank is to blame;
  // rooted collectives finish unevenly by design).
  const double median_inside = summarize(point.inside_s).median;
  const double latest = lateness.front().first, next = lateness.size() > 1 ? lateness[1].first : 0;
  if (latest > outlier_pct / 100.0 * median_inside && latest > 20e-6 && latest > 2 * next)
    point.straggler = lateness.front().second;
  point.arrival += point.straggler ? " -> straggler: rank " + std::to_string(*point.straggler) : " -> no straggler";
}

// --per-iter: an operation is done when its slowest rank is, so per
// iteration the max over the group's ranks. `samples` holds every rank's
// samples, one block per rank.
Summary slowest_per_iteration(const std::vector<char>& samples, const std::vector<int>& ranks, std::size_t iterations) {
  std::vector<double> slowest(iterations, 0);
  for (int r : ranks)
    for (std::size_t i = 0; i < iterations; ++i) {
      double t;
      std::memcpy(&t, samples.data() + (static_cast<std::size_t>(r) * iterations + i) * sizeof(double), sizeof t);
      slowest[i] = std::max(slowest[i], t);
    }
  return summarize(slowest);
}

std::vector<GroupResult> combine_groups(const std::vector<RankResult>& results, const std::vector<char>& samples,
                                        std::size_t iterations, const Collective& collective, std::size_t bytes,
                                        const GatherSettings& settings) {
  std::map<int, GroupResult> groups;
  for (int r = 0; r < static_cast<int>(results.size()); ++r) {
    if (results[r].color < 0) continue;  // sat this point out (a --split auto round)
    GroupResult& g = groups[results[r].color];
    g.color = results[r].color;
    g.ranks.push_back(r);
    g.wrong += results[r].wrong;
    g.checked = g.checked || results[r].checked != 0;
  }
  std::vector<GroupResult> combined;
  for (auto& [color, g] : groups) {
    std::vector<double> times;
    for (int r : g.ranks) times.push_back(results[r].seconds);
    g.seconds = combine_rank_times(times, settings.average);
    const int n = static_cast<int>(g.ranks.size()) * settings.local_ranks;
    g.algbw = static_cast<double>(bytes) / g.seconds / 1e9;
    g.busbw = g.algbw * collective.busbw_factor(n);
    if (settings.per_iteration) g.iteration_stats = slowest_per_iteration(samples, g.ranks, iterations);
    combined.push_back(g);
  }
  return combined;
}

}  // namespace

double combine_rank_times(const std::vector<double>& times, AverageMode mode) {
  switch (mode) {
    case AverageMode::rank0: return times.front();
    case AverageMode::min: return *std::min_element(times.begin(), times.end());
    case AverageMode::max: return *std::max_element(times.begin(), times.end());
    case AverageMode::mean: break;
  }
  double sum = 0;
  for (double t : times) sum += t;
  return sum / static_cast<double>(times.size());
}

GatheredPoint gather_point(Bootstrap& bootstrap, const PointMeasurement& m, const std::vector<int>& colors,
                           bool interrupted_here, const Collective& collective, std::size_t bytes,
                           const std::vector<std::string>& hosts, const GatherSettings& settings) {
  const RankResult mine{m.seconds_per_operation,
                        m.seconds_in_operation,
                        m.wrong,
                        m.checked ? 1 : 0,
                        colors[static_cast<std::size_t>(bootstrap.rank())],
                        interrupted_here ? 1 : 0};
  const std::vector<char> all = bootstrap.all_gather(&mine, sizeof mine);
  std::vector<RankResult> results(static_cast<std::size_t>(bootstrap.size()));
  std::memcpy(results.data(), all.data(), all.size());
  // Every rank runs the same number of iterations, so samples gather as one block each.
  std::vector<char> samples;
  if (settings.per_iteration)
    samples = bootstrap.all_gather(m.samples_seconds.data(), m.samples_seconds.size() * sizeof(double));

  GatheredPoint point;
  for (const RankResult& r : results) point.interrupted = point.interrupted || r.interrupted != 0;
  if (bootstrap.rank() != 0) return point;
  point.groups = combine_groups(results, samples, m.samples_seconds.size(), collective, bytes, settings);
  if (settings.per_rank) diagnose_arrival(results, hosts, settings.outlier_pct, point);
  return point;
}

}  // namespace redline
