#include "collectives/collective_sweep.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "collectives/rank_signals.hpp"
#include "collectives/sweep_rows.hpp"
#include "collectives/sweep_summary.hpp"
#include "collectives/sweep_table.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline {
namespace {

// One series of a collective: a type, an op and a root (-1: it has none).
struct SeriesSpec {
  DataType type;
  ReduceOp op;
  int root;
};

// One sweep's state: the options, the services, the --split groups, and the
// communicator the points run on (the group's with --split).
class Sweep {
 public:
  Sweep(const CollectiveSweepOptions& options, SweepServices& services)
      : o_(options), s_(services), colors_(split_colors(services.hosts, options.split)),
        group_hosts_(group_host_names(colors_, services.hosts)), backend_(&services.backend) {}

  CollectiveSweepResult run();

 private:
  bool root() const { return s_.bootstrap.rank() == 0; }
  void split_into_groups();
  void start_report();
  std::vector<SeriesSpec> series_of(const Collective& collective) const;
  bool run_collective(const Collective& collective);
  bool run_series(const Collective& collective, const SeriesSpec& spec);
  std::unique_ptr<CollectiveBuffers> prepare_buffers(const Collective& collective, const CollectiveCase& c,
                                                     std::string& why_not);
  void warm_up(const Collective& collective, const CollectiveCase& c, const SeriesKey& key,
               CollectiveBuffers& buffers);
  bool run_size(const Collective& collective, const CollectiveCase& c, const SeriesKey& key,
                CollectiveBuffers* buffers, const std::string& why_not, std::size_t bytes_asked);
  void record_skipped(const Collective& collective, const CollectiveCase& c, const SeriesKey& key,
                      std::size_t bytes_asked, const std::string& reason);
  GatheredPoint measure(const Collective& collective, CollectiveBuffers& buffers, const CollectiveCase& c,
                        std::size_t count, const CollectiveCounts& counts, bool in_place, const std::string& label);
  void record_measured(const Collective& collective, const CollectiveCase& c, const SeriesKey& key,
                       const CollectiveCounts& counts, const GatheredPoint (&sides)[2]);
  CollectiveSweepResult conclude(bool interrupted);

  const CollectiveSweepOptions& o_;
  SweepServices& s_;
  std::vector<int> colors_;                // per global rank: its --split group
  std::map<int, std::string> group_hosts_;  // group -> "a+b"
  std::unique_ptr<Backend> group_backend_;  // --split
  Backend* backend_;                        // where the points run
  std::optional<SweepTable> table_;         // rank 0
  std::uint64_t seed_ = 0x5eed;
};

// --split: every group its own communicator. Rooted collectives run inside
// each group, so a root must exist there.
void Sweep::split_into_groups() {
  check_split_groups(colors_, s_.hosts, o_.split);
  const auto groups = static_cast<int>(std::set<int>(colors_.begin(), colors_.end()).size());
  const int group_ranks = s_.backend.size() / groups;
  const bool rooted = std::any_of(o_.collectives.begin(), o_.collectives.end(),
                                  [](const Collective* c) { return c->uses_root(); });
  for (int root_rank : o_.roots)
    if (rooted && root_rank >= group_ranks)
      throw UsageError("-r", std::to_string(root_rank),
                       "--split groups have only " + std::to_string(group_ranks) + " ranks each");
  s_.faults.before_stage(RunStage::split);
  s_.watchdog.enter("communicator split (--split)");
  group_backend_ = s_.backend.split(colors_[static_cast<std::size_t>(s_.bootstrap.rank())], s_.bootstrap.rank());
  s_.watchdog.leave();
  s_.watchdog.set_abort_operations([&world = s_.backend, &group = group_backend_] {
    group->abort();
    world.abort();
  });
  backend_ = group_backend_.get();
}

void Sweep::start_report() {
  Backend& world = s_.backend;
  const std::string hosts = describe_hosts(s_.hosts);
  s_.record.add_summary("backend", world.name() + ", bootstrap " + s_.bootstrap.kind());
  s_.record.add_summary("ranks", std::to_string(world.size()) + " (" + std::to_string(s_.bootstrap.size()) +
                                     " processes x " + std::to_string(world.local_ranks()) + " local)");
  s_.record.add_summary("hosts", hosts);
  if (!root()) return;
  const SweepHeader header{o_.tool,    world.name(),
                           s_.bootstrap.kind(), world.size(),
                           hosts,      o_.point.check_iterations > 0 ? o_.types : std::vector<DataType>{},
                           o_.split};
  table_->header(header, s_.record.report().env);
}

// Collectives without an op run once (as sum); without a root, once (-1).
std::vector<SeriesSpec> Sweep::series_of(const Collective& collective) const {
  const std::vector<ReduceOp> ops = collective.uses_op() ? o_.ops : std::vector<ReduceOp>{ReduceOp::sum};
  std::vector<int> roots = {-1};
  if (collective.uses_root()) {
    roots = o_.roots;
    if (roots.empty())
      for (int r = 0; r < backend_->size(); ++r) roots.push_back(r);
  }
  std::vector<SeriesSpec> series;
  for (DataType type : o_.types)
    for (ReduceOp op : ops)
      for (int root_rank : roots) series.push_back({type, op, root_rank});
  return series;
}

// Buffers for the largest size, or why not. Every rank must agree, or the
// ones that go on would wait forever.
std::unique_ptr<CollectiveBuffers> Sweep::prepare_buffers(const Collective& collective, const CollectiveCase& c,
                                                          std::string& why_not) {
  const std::size_t max_bytes = o_.sizes.empty() ? 0 : o_.sizes.back();
  why_not = backend_->unsupported_reason(c.type, collective.uses_op() ? c.op : ReduceOp::sum);
  std::unique_ptr<CollectiveBuffers> buffers;
  if (why_not.empty()) {
    try {
      buffers = std::make_unique<CollectiveBuffers>(*backend_, collective, max_bytes / info(c.type).bytes, c.type);
    } catch (const std::exception& e) {
      why_not = std::string("out of memory for ") + format_size(max_bytes) + ": " + e.what();
    }
  }
  const std::int32_t ready = why_not.empty() ? 1 : 0;
  const std::vector<char> all_ready = s_.bootstrap.all_gather(&ready, sizeof ready);
  for (int r = 0; r < s_.bootstrap.size() && why_not.empty(); ++r) {
    std::int32_t other;
    std::memcpy(&other, all_ready.data() + r * sizeof other, sizeof other);
    if (!other) why_not = "rank " + std::to_string(r) + " could not allocate the buffers";
  }
  if (!why_not.empty()) buffers.reset();
  return buffers;
}

// Every rank starts together, under the watchdog: one that hangs here is named too.
void Sweep::warm_up(const Collective& collective, const CollectiveCase& c, const SeriesKey& key,
                    CollectiveBuffers& buffers) {
  const std::size_t element = info(c.type).bytes;
  s_.faults.before_stage(RunStage::warmup);
  s_.record.begin_point(series_row(collective, c));
  s_.watchdog.enter(key.text() + " warm-up");
  s_.bootstrap.barrier();
  warm_up_series(*backend_, collective, buffers, o_.sizes.front() / element, o_.sizes.back() / element, c,
                 o_.point.warmup_iterations);
  s_.watchdog.leave();
  s_.record.end_point();
}

// False when the sweep was interrupted.
bool Sweep::run_collective(const Collective& collective) {
  if (root()) table_->collective(collective.name());
  for (const SeriesSpec& spec : series_of(collective))
    if (!run_series(collective, spec)) return false;
  return true;
}

// False when the sweep was interrupted.
bool Sweep::run_series(const Collective& collective, const SeriesSpec& spec) {
  const CollectiveCase c{spec.type, spec.op, std::max(spec.root, 0), backend_->size(), ++seed_};
  const SeriesKey key = series_key(collective, spec.type, spec.op, spec.root);
  std::string why_not;
  const auto buffers = prepare_buffers(collective, c, why_not);
  if (buffers && !o_.sizes.empty() && o_.point.warmup_iterations > 0) warm_up(collective, c, key, *buffers);
  for (std::size_t bytes_asked : o_.sizes)
    if (!run_size(collective, c, key, buffers.get(), why_not, bytes_asked)) return false;
  return true;
}

bool Sweep::run_size(const Collective& collective, const CollectiveCase& c, const SeriesKey& key,
                     CollectiveBuffers* buffers, const std::string& why_not, std::size_t bytes_asked) {
  const std::size_t element = info(c.type).bytes;
  const std::size_t count = bytes_asked / element;
  const CollectiveCounts counts = collective.counts(count, backend_->size(), element);
  std::string skip = why_not;
  if (skip.empty() && counts.param_count == 0)
    skip = "under one element per rank (per-rank blocks are whole 16-byte lines)";
  if (!skip.empty()) {
    if (root()) record_skipped(collective, c, key, bytes_asked, skip);
    return true;
  }
  // The size column is the whole array the collective moves (nccl-tests).
  const std::size_t bytes = std::max(counts.send_count, counts.recv_count) * element;
  s_.faults.before_point(bytes);
  const std::string label = key.text() + " " + format_size(bytes);
  GatheredPoint sides[2];
  for (bool in_place : {false, true})
    sides[in_place] = measure(collective, *buffers, c, count, counts, in_place,
                              label + (in_place ? " in-place" : " out-of-place"));
  // Ctrl-C anywhere: every rank learned it in the same gather, so all stop here together.
  if (sides[0].interrupted || sides[1].interrupted) {
    if (root()) table_->interrupted();
    return false;
  }
  if (root()) record_measured(collective, c, key, counts, sides);
  return true;
}

void Sweep::record_skipped(const Collective& collective, const CollectiveCase& c, const SeriesKey& key,
                           std::size_t bytes_asked, const std::string& reason) {
  const std::size_t count = bytes_asked / info(c.type).bytes;
  table_->skipped(bytes_asked, count, key, reason);
  for (bool in_place : {false, true})
    s_.record.add(skipped_row(point_row(collective, bytes_asked, count, c, in_place), reason));
}

// One layout of one size on every rank. The point covers the barrier and the
// gathers after it: a rank that hangs or dies anywhere in it is named, not
// waited for.
GatheredPoint Sweep::measure(const Collective& collective, CollectiveBuffers& buffers, const CollectiveCase& c,
                             std::size_t count, const CollectiveCounts& counts, bool in_place,
                             const std::string& label) {
  const std::size_t bytes = std::max(counts.send_count, counts.recv_count) * info(c.type).bytes;
  s_.record.begin_point(point_row(collective, bytes, counts.param_count, c, in_place));
  s_.watchdog.enter(label);
  PointSettings settings = o_.point;
  settings.arrival_pass = o_.per_rank;
  // All ranks start the point together, and meet again right before the
  // clock starts (outside the timed region), as nccl-tests does.
  settings.sync_ranks = [this] { s_.bootstrap.barrier(); };
  s_.bootstrap.barrier();
  const PointMeasurement m = measure_point(*backend_, collective, buffers, count, c, in_place, settings, s_.faults);
  const GatherSettings gather{o_.average, o_.point.per_iteration, o_.per_rank, o_.outlier_pct,
                              s_.backend.local_ranks()};
  GatheredPoint point = gather_point(s_.bootstrap, m, colors_, rank_interrupted(), collective, bytes, s_.hosts, gather);
  s_.watchdog.leave();
  s_.record.end_point();
  return point;
}

void Sweep::record_measured(const Collective& collective, const CollectiveCase& c, const SeriesKey& key,
                            const CollectiveCounts& counts, const GatheredPoint (&sides)[2]) {
  const std::size_t bytes = std::max(counts.send_count, counts.recv_count) * info(c.type).bytes;
  const std::size_t count = counts.param_count;  // what each rank passes to the call
  table_->measured(bytes, count, key, sides, o_.point.per_iteration, o_.per_rank);
  const bool split = o_.split != SplitMode::none;
  for (std::size_t g = 0; g < sides[0].groups.size(); ++g)
    for (bool in_place : {false, true}) {
      const GroupResult& group = sides[in_place].groups[g];
      s_.record.add(measured_row(point_row(collective, bytes, count, c, in_place), group, o_.point.per_iteration,
                                 split ? &group_hosts_.at(group.color) : nullptr));
    }
  // --per-rank-csv: the arrival pass runs out of place.
  if (o_.per_rank)
    for (int r = 0; r < static_cast<int>(sides[0].late_s.size()); ++r)
      s_.record.add_per_rank(arrival_row(point_row(collective, bytes, count, c, false), sides[0], r, s_.hosts[r]));
}

// The summary happens on rank 0; then every rank learns the verdict, so all
// exit alike.
CollectiveSweepResult Sweep::conclude(bool interrupted) {
  CollectiveSweepResult result;
  result.interrupted = interrupted;
  std::int32_t verdict[3] = {0, 0, 0};  // wrong values, below expectation, nothing measured
  if (root()) {
    SummaryOptions options;
    options.checked = o_.point.check_iterations > 0;
    options.single_rank = backend_->size() == 1;
    options.interrupted = interrupted;
    options.expect_busbw_GBps = o_.expect_busbw_GBps;
    options.outlier_pct = o_.outlier_pct;
    options.split = o_.split != SplitMode::none;
    options.per_rank = o_.per_rank;
    const SweepSummary summary = summarize_sweep(s_.record.rows(), s_.record.per_rank_rows(), options);
    table_->summary(summary);
    for (const auto& [key, value] : summary.entries) s_.record.add_summary(key, value);
    result.wrong = summary.wrong;
    verdict[0] = summary.wrong > 0;
    verdict[1] = summary.below_expectation;
    verdict[2] = summary.nothing_measured;
  }
  s_.bootstrap.broadcast(verdict, sizeof verdict, 0);
  if (!root()) result.wrong = static_cast<std::uint64_t>(verdict[0]);
  result.below_expectation = verdict[1] != 0;
  result.nothing_measured = verdict[2] != 0;
  return result;
}

CollectiveSweepResult Sweep::run() {
  // Back to the world alone on every way out, before the group communicator goes.
  struct AbortWorldOnly {
    SweepServices& s;
    ~AbortWorldOnly() {
      s.watchdog.set_abort_operations([&world = s.backend] { world.abort(); });
    }
  } restore_abort{s_};
  if (o_.split != SplitMode::none) split_into_groups();
  if (root()) table_.emplace(s_.out, group_hosts_, o_.split != SplitMode::none);
  start_report();
  bool interrupted = false;
  for (const Collective* collective : o_.collectives)
    if (!run_collective(*collective)) {
      interrupted = true;
      break;
    }
  return conclude(interrupted);
}

}  // namespace

CollectiveSweepResult run_collective_sweep(const CollectiveSweepOptions& options, SweepServices& services) {
  return Sweep(options, services).run();
}

}  // namespace redline
