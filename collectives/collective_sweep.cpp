#include "collectives/collective_sweep.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <ostream>
#include <set>
#include <thread>

#include "collectives/nccl_table.hpp"
#include "collectives/verify.hpp"
#include "collectives/watchdog.hpp"
#include "harness/report/console_table.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/measure/saturation.hpp"
#include "harness/measure/stats.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

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

// A point's result for one group of ranks (the whole world without --split).
struct GroupResult {
  int color = 0;
  std::vector<int> ranks;
  double seconds = 0;  // combined per -a
  std::uint64_t wrong = 0;
  bool checked = false;
  double algbw = 0, busbw = 0;
  Summary iteration_stats;  // --per-iter: per operation, slowest rank
};


std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    text += (text.empty() ? "" : ",") + std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return text;
}

// Colors for --split: hosts numbered in order of first appearance.
std::vector<int> split_colors(const std::vector<std::string>& hosts, SplitMode mode) {
  std::map<std::string, int> index;
  std::vector<int> colors;
  for (const auto& h : hosts) {
    const auto it = index.emplace(h, static_cast<int>(index.size())).first;
    colors.push_back(mode == SplitMode::pairs ? it->second / 2 : mode == SplitMode::node ? it->second : 0);
  }
  return colors;
}

// Every rank computes the same groups from the same host list, so every rank
// reaches the same verdict here. Unequal groups would disagree on counts,
// roots and skipped sizes and leave ranks waiting in different gathers; a
// one-rank group measures no link.
void check_split_groups(const std::vector<int>& colors, const std::vector<std::string>& hosts, SplitMode mode) {
  std::map<int, int> sizes;
  std::map<int, std::string> names;
  for (std::size_t r = 0; r < colors.size(); ++r) {
    ++sizes[colors[r]];
    if (names[colors[r]].find(hosts[r]) == std::string::npos)
      names[colors[r]] += (names[colors[r]].empty() ? "" : "+") + hosts[r];
  }
  bool usable = true;
  for (const auto& [color, n] : sizes) usable = usable && n == sizes.begin()->second && n >= 2;
  if (usable) return;
  std::string layout;
  for (const auto& [color, n] : sizes) layout += (layout.empty() ? "" : ", ") + names[color] + ": " + std::to_string(n);
  throw UsageError("--split", mode == SplitMode::node ? "node" : "pairs",
                   "needs groups of equal size with at least 2 ranks each; the ranks per group are " + layout);
}

// Everything that stays fixed across the points of one run.
struct SweepContext {
  Bootstrap& bootstrap;
  const CollectiveSweepOptions& options;
  std::vector<std::string> hosts;
  std::vector<int> colors;  // per global rank
  Watchdog* watchdog = nullptr;
  bool is_root() const { return bootstrap.rank() == 0; }
};

// A point as rank 0 sees it: every group's result and the arrival diagnosis.
struct GatheredPoint {
  bool interrupted = false;  // on any rank: every rank stops after this point
  std::vector<GroupResult> groups;
  std::string arrival;            // --per-rank: the slowest ranks, one line
  std::optional<int> straggler;   // --per-rank: the rank that arrives last, when beyond the outlier threshold
  std::vector<double> late_s;     // --per-rank, per rank: how much later than the earliest it arrived
  std::vector<double> inside_s;   // --per-rank, per rank: mean time inside one operation
};

// --per-rank: the rank that arrives last spends the least time inside the
// operation, since everyone else waits there for it. Its lateness is the
// longest time inside minus its own.
void diagnose_arrival(const SweepContext& ctx, const std::vector<RankResult>& results, GatheredPoint& point) {
  double longest = 0;
  std::vector<double> inside;
  for (const auto& r : results) {
    longest = std::max(longest, r.seconds_in_operation);
    inside.push_back(r.seconds_in_operation);
  }
  std::vector<std::pair<double, int>> lateness;
  for (int r = 0; r < static_cast<int>(results.size()); ++r) {
    lateness.emplace_back(longest - results[r].seconds_in_operation, r);
    point.late_s.push_back(longest - results[r].seconds_in_operation);
  }
  point.inside_s = inside;
  std::sort(lateness.rbegin(), lateness.rend());
  point.arrival = "#   per-rank arrival, latest first:";
  for (std::size_t k = 0; k < lateness.size() && k < 3; ++k)
    point.arrival += (k ? "; " : " ") + std::string("rank ") + std::to_string(lateness[k].second) + " (" +
                     ctx.hosts[lateness[k].second] + ") " + human_number(lateness[k].first * 1e6) + " us late";
  // A straggler stands out: late by more than --outlier of the time inside
  // an operation, by at least 20 us (below that it is scheduling noise), and
  // by at least twice the next latest rank (else no single rank is to blame;
  // rooted collectives finish unevenly by design).
  const double median_inside = summarize(inside).median;
  const double latest = lateness.front().first, next = lateness.size() > 1 ? lateness[1].first : 0;
  if (latest > ctx.options.outlier_pct / 100.0 * median_inside && latest > 20e-6 && latest > 2 * next)
    point.straggler = lateness.front().second;
  point.arrival += point.straggler ? " -> straggler: rank " + std::to_string(*point.straggler) : " -> no straggler";
}

// Measures one point on every rank; rank 0 gets every group's result.
GatheredPoint measure_and_gather(SweepContext& ctx, Backend& backend, const Collective& collective,
                                 CollectiveBuffers& buffers, std::size_t count, const CollectiveCase& c,
                                 bool in_place, std::size_t reported_bytes, const std::string& label) {
  const FaultInjection& faults = ctx.options.faults;
  const int me = ctx.bootstrap.rank();
  if (me == faults.hang_rank && reported_bytes == faults.hang_bytes)
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // test-only: a rank that never arrives
  if (me == faults.exit_rank && reported_bytes == faults.exit_bytes) std::_Exit(3);  // test-only: a rank that dies

  // The point covers the barrier and the gather after it: a rank that hangs
  // or dies anywhere in it is named, not waited for.
  ctx.watchdog->enter(label);
  PointSettings settings = ctx.options.point;
  settings.arrival_pass = ctx.options.per_rank;
  settings.corrupt_input = me == faults.wrong_rank;
  if (me == faults.delay_rank) {
    const auto delay = std::chrono::duration<double, std::milli>(faults.delay_ms);
    settings.before_each_operation = [delay] { std::this_thread::sleep_for(delay); };
  }
  // All ranks start the point together, and meet again right before the
  // clock starts (outside the timed region), as nccl-tests does.
  settings.sync_ranks = [&ctx] { ctx.bootstrap.barrier(); };
  ctx.bootstrap.barrier();
  const PointMeasurement m = measure_point(backend, collective, buffers, count, c, in_place, settings);

  const RankResult mine{m.seconds_per_operation, m.seconds_in_operation, m.wrong, m.checked ? 1 : 0, ctx.colors[me],
                        interrupted() ? 1 : 0};
  const std::vector<char> all = ctx.bootstrap.all_gather(&mine, sizeof mine);
  ctx.watchdog->leave();
  GatheredPoint point;
  for (int r = 0; r < ctx.bootstrap.size(); ++r) {
    RankResult other;
    std::memcpy(&other, all.data() + static_cast<std::size_t>(r) * sizeof other, sizeof other);
    point.interrupted = point.interrupted || other.interrupted != 0;
  }
  // Every rank runs the same number of iterations, so samples gather as one block each.
  std::vector<char> all_samples;
  if (settings.per_iteration)
    all_samples = ctx.bootstrap.all_gather(m.samples_seconds.data(), m.samples_seconds.size() * sizeof(double));
  if (!ctx.is_root()) return point;

  const int world = ctx.bootstrap.size();
  std::vector<RankResult> results(static_cast<std::size_t>(world));
  std::memcpy(results.data(), all.data(), all.size());
  std::map<int, GroupResult> groups;
  for (int r = 0; r < world; ++r) {
    GroupResult& g = groups[results[r].color];
    g.color = results[r].color;
    g.ranks.push_back(r);
    g.wrong += results[r].wrong;
    g.checked = g.checked || results[r].checked != 0;
  }
  const std::size_t iterations = m.samples_seconds.size();
  for (auto& [color, g] : groups) {
    std::vector<double> times;
    for (int r : g.ranks) times.push_back(results[r].seconds);
    g.seconds = combine_rank_times(times, ctx.options.average);
    const int n = static_cast<int>(g.ranks.size()) * backend.local_ranks();
    g.algbw = static_cast<double>(reported_bytes) / g.seconds / 1e9;
    g.busbw = g.algbw * collective.busbw_factor(n);
    if (settings.per_iteration) {
      // An operation is done when its slowest rank is: per iteration, the max.
      std::vector<double> slowest(iterations, 0);
      for (int r : g.ranks)
        for (std::size_t i = 0; i < iterations; ++i) {
          double t;
          std::memcpy(&t, all_samples.data() + (static_cast<std::size_t>(r) * iterations + i) * sizeof(double),
                      sizeof t);
          slowest[i] = std::max(slowest[i], t);
        }
      g.iteration_stats = summarize(slowest);
    }
    point.groups.push_back(g);
  }
  if (ctx.options.per_rank) diagnose_arrival(ctx, results, point);
  return point;
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

std::vector<std::string> gather_host_names(Bootstrap& bootstrap) {
  char name[256] = {};
  if (const char* override_name = std::getenv("REDLINE_HOSTNAME"); override_name && *override_name)
    std::strncpy(name, override_name, sizeof name - 1);
  else if (gethostname(name, sizeof name - 1) != 0)
    std::strcpy(name, "unknown");
  const std::vector<char> all = bootstrap.all_gather(name, sizeof name);
  std::vector<std::string> hosts;
  for (int r = 0; r < bootstrap.size(); ++r) hosts.emplace_back(all.data() + static_cast<std::size_t>(r) * sizeof name);
  return hosts;
}

std::string describe_hosts(const std::vector<std::string>& hosts) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> ranks;
  for (int r = 0; r < static_cast<int>(hosts.size()); ++r) {
    if (!ranks.count(hosts[r])) order.push_back(hosts[r]);
    ranks[hosts[r]].push_back(r);
  }
  std::string text;
  for (const auto& h : order) text += (text.empty() ? "" : "; ") + h + ": ranks " + rank_list(ranks[h]);
  return text;
}

}  // namespace redline

namespace redline {
namespace {

struct SeriesKey {
  std::string collective, type, op;
  int root;
  bool operator<(const SeriesKey& o) const {
    return std::tie(collective, type, op, root) < std::tie(o.collective, o.type, o.op, o.root);
  }
  std::string text() const {
    return collective + " " + type + (op == "none" ? "" : " " + op) + (root >= 0 ? " root " + std::to_string(root) : "");
  }
};

struct SeriesPoint {
  std::size_t bytes;
  int color;
  double busbw;  // the better of out-of-place and in-place
};

TableSide table_side(const GroupResult& g) {
  TableSide side;
  side.time_us = g.seconds * 1e6;
  side.algbw_GBps = g.algbw;
  side.busbw_GBps = g.busbw;
  if (g.checked) side.wrong = g.wrong;
  return side;
}

Row make_row(const Collective& collective, std::size_t bytes, std::size_t count, const CollectiveCase& c,
             bool uses_root, bool in_place) {
  Row row;
  row.param("collective", std::string(collective.name()))
      .param("bytes", std::to_string(bytes))
      .param("count", std::to_string(count))
      .param("dtype", std::string(info(c.type).name))
      .param("op", collective.uses_op() ? std::string(to_string(c.op)) : "none")
      .param("root", std::to_string(uses_root ? c.root : -1))
      .param("inplace", in_place ? "1" : "0");
  return row;
}

}  // namespace

CollectiveSweepResult run_collective_sweep(Bootstrap& bootstrap, Backend& world_backend,
                                           const CollectiveSweepOptions& options, Environment env, std::ostream& out,
                                           const std::vector<std::string>& hosts, Watchdog& watchdog) {
  SweepContext ctx{bootstrap, options, hosts, {}, &watchdog};
  ctx.colors = split_colors(ctx.hosts, options.split);
  if (options.split != SplitMode::none) {
    check_split_groups(ctx.colors, ctx.hosts, options.split);
    // Rooted collectives run inside each group, so a root must exist there.
    const auto groups = static_cast<int>(std::set<int>(ctx.colors.begin(), ctx.colors.end()).size());
    const int group_ranks = world_backend.size() / groups;
    const bool rooted = std::any_of(options.collectives.begin(), options.collectives.end(),
                                    [](const Collective* c) { return c->uses_root(); });
    for (int root_rank : options.roots)
      if (rooted && root_rank >= group_ranks)
        throw UsageError("-r", std::to_string(root_rank),
                         "--split groups have only " + std::to_string(group_ranks) + " ranks each");
  }
  std::unique_ptr<Backend> group_backend;
  // Unset on every way out, before group_backend is destroyed.
  struct AbortWorldOnly {
    Watchdog& watchdog;
    Backend& world;
    ~AbortWorldOnly() { watchdog.set_abort_operations([&w = world] { w.abort(); }); }
  } restore_abort{watchdog, world_backend};
  if (options.split != SplitMode::none) {
    if (options.faults.hang_at == "split" && bootstrap.rank() == options.faults.hang_rank)
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // test-only: never reaches the split
    watchdog.enter("communicator split (--split)");
    group_backend = world_backend.split(ctx.colors[bootstrap.rank()], bootstrap.rank());
    watchdog.leave();
    watchdog.set_abort_operations([&world_backend, &group_backend] {
      group_backend->abort();
      world_backend.abort();
    });
  }
  Backend& backend = group_backend ? *group_backend : world_backend;

  const bool root = ctx.is_root();
  CollectiveSweepResult result;
  result.report = start_report("allreduce_bench", std::move(env));
  Report& report = result.report;
  result.per_rank.tool = report.tool;
  result.per_rank.run_id = report.run_id;
  result.per_rank.env = report.env;
  const int world_ranks = world_backend.size();
  report.summary.emplace_back("backend", world_backend.name() + ", bootstrap " + bootstrap.kind());
  report.summary.emplace_back("ranks", std::to_string(world_ranks) + " (" + std::to_string(bootstrap.size()) +
                                           " processes x " + std::to_string(world_backend.local_ranks()) + " local)");
  report.summary.emplace_back("hosts", describe_hosts(ctx.hosts));
  if (root) {
    out << "# redline allreduce_bench: backend " << world_backend.name() << ", bootstrap " << bootstrap.kind() << ", "
        << world_ranks << " ranks\n# hosts: " << describe_hosts(ctx.hosts) << "\n";
    // What changes the figures, on the console too (the JSON has it all):
    // the libraries that move the data and the variables that steer them.
    if (!report.env.nccl_version.empty()) out << "# NCCL " << report.env.nccl_version << "\n";
    if (!report.env.mpi_library.empty()) out << "# MPI " << report.env.mpi_library << "\n";
    for (const auto& [name, value] : report.env.variables)
      if (steers_communication(name)) out << "# " << name << "=" << value << "\n";
    if (options.point.check_iterations > 0)
      for (DataType type : options.types)
        if (info(type).is_floating) out << "# check: " << tolerance_statement(type) << "\n";
    if (world_ranks == 1)
      out << "# world size 1: nothing crosses a link, so busbw factors that scale with (n-1)/n are 0, and an"
             " in-place operation moves nothing (the peak counts out-of-place only);"
             " launch one rank per GPU (mpirun -np N) to measure a fabric\n";
    if (options.split != SplitMode::none)
      out << "# --split " << (options.split == SplitMode::node ? "node" : "pairs")
          << ": every group runs at the same time; the last column names the group\n";
    out << std::flush;
  }

  std::map<SeriesKey, std::vector<SeriesPoint>> series;
  std::map<SeriesKey, std::set<std::string>> skip_reasons;
  std::map<int, std::string> group_hosts;  // color -> hosts
  for (int r = 0; r < bootstrap.size(); ++r)
    if (group_hosts[ctx.colors[r]].find(ctx.hosts[r]) == std::string::npos)
      group_hosts[ctx.colors[r]] += (group_hosts[ctx.colors[r]].empty() ? "" : "+") + ctx.hosts[r];
  std::map<int, int> straggler_count;
  std::uint64_t seed = 0x5eed;
  const std::size_t max_bytes = options.sizes.empty() ? 0 : options.sizes.back();

  for (const Collective* collective : options.collectives) {
    if (root) out << "#\n# " << collective->name() << "\n" << nccl_table_header() << std::flush;
    const std::vector<ReduceOp> ops = collective->uses_op() ? options.ops : std::vector<ReduceOp>{ReduceOp::sum};
    std::vector<int> roots = {-1};
    if (collective->uses_root()) {
      roots = options.roots;
      if (roots.empty())
        for (int r = 0; r < backend.size(); ++r) roots.push_back(r);
    }
    for (DataType type : options.types)
      for (ReduceOp op : ops)
        for (int root_rank : roots) {
          const CollectiveCase c{type, op, std::max(root_rank, 0), backend.size(), ++seed};
          const std::size_t element = info(type).bytes;
          std::string why_not = backend.unsupported_reason(type, collective->uses_op() ? op : ReduceOp::sum);
          std::unique_ptr<CollectiveBuffers> buffers;
          if (why_not.empty()) {
            try {
              buffers = std::make_unique<CollectiveBuffers>(backend, *collective, max_bytes / element, type);
            } catch (const std::exception& e) {
              why_not = std::string("out of memory for ") + format_size(max_bytes) + ": " + e.what();
            }
          }
          // Every rank must agree, or the ones that go on would wait forever.
          const std::int32_t ready = why_not.empty() ? 1 : 0;
          const std::vector<char> all_ready = bootstrap.all_gather(&ready, sizeof ready);
          for (int r = 0; r < bootstrap.size() && why_not.empty(); ++r) {
            std::int32_t other;
            std::memcpy(&other, all_ready.data() + r * sizeof other, sizeof other);
            if (!other) why_not = "rank " + std::to_string(r) + " could not allocate the buffers";
          }
          if (!why_not.empty()) buffers.reset();

          if (buffers && !options.sizes.empty() && options.point.warmup_iterations > 0) {
            const std::string op_name = collective->uses_op() ? std::string(to_string(op)) : "none";
            const SeriesKey key{std::string(collective->name()), std::string(info(type).name), op_name, root_rank};
            // Every rank starts together, under the watchdog: one that hangs here is named too.
            if (options.faults.hang_at == "warmup" && bootstrap.rank() == options.faults.hang_rank)
              for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // test-only: never reaches the pass
            watchdog.enter(key.text() + " warm-up");
            bootstrap.barrier();
            warm_up_series(backend, *collective, *buffers, options.sizes.front() / element, max_bytes / element, c,
                           options.point.warmup_iterations);
            watchdog.leave();
          }

          for (std::size_t bytes_asked : options.sizes) {
            const std::size_t count = bytes_asked / element;
            const CollectiveCounts counts = collective->counts(count, backend.size(), element);
            // The size column is the whole array the collective moves; the
            // count column is what each rank passes to the call (nccl-tests).
            const std::size_t bytes = std::max(counts.send_count, counts.recv_count) * element;
            const std::size_t reported_count = counts.param_count;
            const std::string op_name = collective->uses_op() ? std::string(to_string(op)) : "none";
            const SeriesKey key{std::string(collective->name()), std::string(info(type).name), op_name, root_rank};
            std::string skip = why_not;
            if (skip.empty() && counts.param_count == 0) skip = "under one element per rank (per-rank blocks are whole 16-byte lines)";
            if (!skip.empty()) {
              if (root) {
                TableSide side;
                side.skipped = "skipped";
                out << nccl_table_row(bytes_asked, count, std::string(info(type).name), op_name, root_rank, side, side);
                // The reason once per series, not under every size.
                if (skip_reasons[key].insert(skip).second) out << "#  " << key.text() << " skipped: " << skip << "\n";
                out << std::flush;
                for (bool in_place : {false, true}) {
                  Row row = make_row(*collective, bytes_asked, count, c, collective->uses_root(), in_place);
                  row.status = "skipped";
                  row.note = skip;
                  // Not measured (NaN), but the columns are there: a file with
                  // every size skipped has the same header as any other.
                  for (const char* metric : {"time_us", "algbw_GBps", "busbw_GBps", "wrong"})
                    row.metric(metric, std::numeric_limits<double>::quiet_NaN());
                  report.rows.push_back(row);
                }
              }
              continue;
            }
            const std::string label = key.text() + " " + format_size(bytes);
            GatheredPoint sides[2];
            for (bool in_place : {false, true})
              sides[in_place] = measure_and_gather(ctx, backend, *collective, *buffers, count, c, in_place, bytes,
                                                   label + (in_place ? " in-place" : " out-of-place"));
            // Ctrl-C anywhere: every rank learned it in the same gather, so all stop here together.
            result.interrupted = sides[0].interrupted || sides[1].interrupted;
            if (result.interrupted) {
              if (root) out << "# interrupted: reporting the sizes measured so far\n";
              goto finished;
            }
            if (!root) continue;
            for (std::size_t g = 0; g < sides[0].groups.size(); ++g) {
              const GroupResult& oop = sides[0].groups[g];
              const GroupResult& inp = sides[1].groups[g];
              std::string line = nccl_table_row(bytes, reported_count, std::string(info(type).name), op_name,
                                                root_rank, table_side(oop), table_side(inp));
              if (options.split != SplitMode::none) {
                line.pop_back();
                line += "  group " + std::to_string(oop.color) + " (" + group_hosts[oop.color] + ")\n";
              }
              out << line;
              // With one rank an in-place operation moves nothing (NCCL returns
              // at once: one H100 "broadcast" 64 MiB in-place at 131 TB/s), so
              // only out-of-place may set the peak, the saturation size and the
              // acceptance. The table shows both, as nccl-tests does.
              const double busbw = backend.size() == 1 ? oop.busbw : std::max(oop.busbw, inp.busbw);
              series[key].push_back({bytes, oop.color, busbw});
              for (const GroupResult* gr : {&oop, &inp}) {
                const bool in_place = gr == &inp;
                Row row = make_row(*collective, bytes, reported_count, c, collective->uses_root(), in_place);
                if (options.split != SplitMode::none)
                  row.param("group", std::to_string(gr->color)).param("group_hosts", group_hosts[gr->color]);
                row.metric("time_us", gr->seconds * 1e6)
                    .metric("algbw_GBps", gr->algbw)
                    .metric("busbw_GBps", gr->busbw)
                    .metric("wrong", gr->checked ? static_cast<double>(gr->wrong) : std::nan(""));
                if (options.point.per_iteration)
                  row.metric("time_p50_us", gr->iteration_stats.median * 1e6)
                      .metric("time_p99_us", gr->iteration_stats.p99 * 1e6)
                      .metric("time_max_us", gr->iteration_stats.max * 1e6)
                      .metric("time_cv", gr->iteration_stats.cv);
                if (gr->wrong > 0) {
                  row.status = "wrong";
                  row.note = std::to_string(gr->wrong) + " elements differ from the expected values";
                }
                result.wrong += gr->wrong;
                report.rows.push_back(row);
              }
            }
            if (options.point.per_iteration)
              for (const GatheredPoint& side : sides)
                for (const GroupResult& g : side.groups)
                  out << "#   per-iteration " << (&side == &sides[1] ? "in-place" : "out-of-place") << ": p50 "
                      << human_number(g.iteration_stats.median * 1e6) << " us, p99 "
                      << human_number(g.iteration_stats.p99 * 1e6) << " us, max "
                      << human_number(g.iteration_stats.max * 1e6) << " us, CV "
                      << format_number(100 * g.iteration_stats.cv, 1) << "%\n";
            if (options.per_rank) {
              out << sides[0].arrival << "\n";
              if (sides[0].straggler) ++straggler_count[*sides[0].straggler];
              // One row per rank, for --per-rank-csv: the arrival pass runs
              // out of place.
              for (std::size_t r = 0; r < sides[0].late_s.size(); ++r) {
                Row row = make_row(*collective, bytes, reported_count, c, collective->uses_root(), false);
                row.param("rank", std::to_string(r)).param("host", ctx.hosts[r]);
                row.metric("late_us", sides[0].late_s[r] * 1e6).metric("inside_us", sides[0].inside_s[r] * 1e6);
                if (sides[0].straggler && *sides[0].straggler == static_cast<int>(r)) row.note = "straggler";
                result.per_rank.rows.push_back(std::move(row));
              }
            }
            out << std::flush;
          }
        }
  }

finished:
  // Acceptance and the rest of the summary happen on rank 0; then everyone
  // learns the verdict so all ranks exit alike.
  std::int32_t verdict[3] = {0, 0, 0};  // wrong > 0, below expectation, nothing measured
  if (root) {
    double busbw_sum = 0;
    std::size_t busbw_n = 0;
    for (const Row& row : report.rows)
      for (const auto& [name, value] : row.metrics)
        if (name == "busbw_GBps" && std::isfinite(value)) {
          busbw_sum += value;
          ++busbw_n;
        }
    if (series.empty())
      out << "# Out of bounds values : N/A (nothing measured)\n";
    else if (options.point.check_iterations > 0)
      out << "# Out of bounds values : " << result.wrong << (result.wrong ? " ERROR" : " OK") << "\n";
    else
      out << "# Out of bounds values : N/A (-c 0: not checked)\n";
    // Nothing measured has no average: N/A, never a 0 that reads as measured.
    const std::string avg_busbw = busbw_n ? format_number(busbw_sum / busbw_n, 4) : "N/A (nothing measured)";
    out << "# Avg bus bandwidth    : " << avg_busbw << "\n#\n";
    report.summary.emplace_back("wrong_values", std::to_string(result.wrong));
    if (busbw_n) report.summary.emplace_back("avg_busbw_GBps", avg_busbw);

    if (series.empty() && !result.interrupted) {
      // Every size skipped: no result is a failed run, never a quiet pass.
      result.nothing_measured = true;
      out << "# FAILED: nothing was measured (every size skipped; the reasons are above)\n";
      report.summary.emplace_back("result", "FAILED: nothing was measured");
    }
    if (options.expect_busbw_GBps && series.empty()) {
      // Nothing measured is no evidence of bandwidth: never a silent pass.
      result.below_expectation = true;
      out << "# FAILED: --expect-busbw " << format_number(*options.expect_busbw_GBps, 2)
          << ": no size was measured (all skipped)\n";
      report.summary.emplace_back("acceptance", "FAILED: nothing was measured");
    }
    for (const auto& [key, points] : series) {
      // Each group's own curve (one group, the world, without --split): a
      // slow node in any group must not pass acceptance.
      std::map<int, std::vector<ThroughputPoint>> curves;
      for (const auto& p : points) curves[p.color].push_back({static_cast<double>(p.bytes), p.busbw});
      for (const auto& [color, curve] : curves) {
        const Saturation sat = analyze_saturation(curve);
        if (!sat.best) continue;
        const std::string name = key.text() + (options.split == SplitMode::none
                                                   ? ""
                                                   : " group " + std::to_string(color) + " (" + group_hosts[color] + ")");
        const std::string peak = sat.fraction ? format_number(sat.best->throughput, 2) + " GB/s at " +
                                                    format_size(static_cast<std::uint64_t>(sat.best->size))
                                              : std::string("0 GB/s (its busbw factor is 0 at this world size)");
        if (sat.fraction) {
          const std::string saturation = format_size(static_cast<std::uint64_t>(sat.fraction->size)) + " (" +
                                         format_number(sat.fraction->throughput, 2) + " GB/s, 90% of peak)";
          out << "# " << name << ": peak busbw " << peak << "; saturation size " << saturation << "\n";
          report.summary.emplace_back("saturation_size " + name, saturation);
        } else {  // a busbw factor of 0 (world size 1): see analyze_saturation
          out << "# " << name << ": peak busbw " << peak << "; no saturation size\n";
        }
        report.summary.emplace_back("peak_busbw " + name, peak);
        if (!options.expect_busbw_GBps) continue;
        const bool below = sat.best->throughput < *options.expect_busbw_GBps;
        result.below_expectation = result.below_expectation || below;
        const std::string text = std::string(below ? "FAILED: " : "PASSED: ") + name + " peak busbw " +
                                 format_number(sat.best->throughput, 2) + " GB/s " + (below ? "is below" : ">=") +
                                 " --expect-busbw " + format_number(*options.expect_busbw_GBps, 2);
        out << "# " << text << "\n";
        report.summary.emplace_back("acceptance " + name, below ? text : "PASSED");
      }
      if (options.split != SplitMode::none) {
        // Per size, groups more than --outlier below the median group.
        std::map<std::size_t, std::vector<const SeriesPoint*>> by_size;
        for (const auto& p : points) by_size[p.bytes].push_back(&p);
        std::map<int, int> slow_sizes;
        for (const auto& [bytes, group_points] : by_size) {
          std::vector<double> values;
          for (const auto* p : group_points) values.push_back(p->busbw);
          const double median = summarize(values).median;
          for (const auto* p : group_points)
            if (p->busbw < median * (1 - options.outlier_pct / 100.0)) ++slow_sizes[p->color];
        }
        std::string slow;
        for (const auto& [color, n] : slow_sizes)
          slow += (slow.empty() ? "" : "; ") + std::string("group ") + std::to_string(color) + " (" +
                  group_hosts[color] + ") at " + std::to_string(n) + " of " + std::to_string(by_size.size()) + " sizes";
        const std::string text = slow.empty() ? "none" : slow;
        out << "# " << key.text() << ": groups more than " << format_number(options.outlier_pct, 0)
            << "% below the median busbw: " << text << "\n";
        report.summary.emplace_back("slow_groups " + key.text(), text);
      }
    }
    if (options.per_rank) {
      std::string text;
      for (const auto& [rank, n] : straggler_count)
        text += (text.empty() ? "" : "; ") + std::string("rank ") + std::to_string(rank) + " (" + ctx.hosts[rank] +
                ") at " + std::to_string(n) + " sizes";
      out << "# stragglers (arrive last by more than " << format_number(options.outlier_pct, 0)
          << "% of the time in the operation): " << (text.empty() ? "none" : text) << "\n";
      report.summary.emplace_back("stragglers", text.empty() ? "none" : text);
    }
    out << std::flush;
    verdict[0] = result.wrong > 0;
    verdict[1] = result.below_expectation;
    verdict[2] = result.nothing_measured;
  }
  bootstrap.broadcast(verdict, sizeof verdict, 0);
  if (!root) {
    result.wrong = verdict[0];
    result.below_expectation = verdict[1] != 0;
    result.nothing_measured = verdict[2] != 0;
  }
  return result;
}

}  // namespace redline
