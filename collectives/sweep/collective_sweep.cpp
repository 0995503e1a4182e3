#include "collectives/sweep/collective_sweep.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "collectives/diagnosis/split_auto.hpp"
#include "collectives/sweep/sweep_rows.hpp"
#include "collectives/sweep/sweep_summary.hpp"
#include "collectives/sweep/sweep_table.hpp"
#include "harness/core/interrupt.hpp"
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
      : options_(options),
        services_(services),
        colors_(split_colors(services.hosts, options.split)),
        group_hosts_(group_host_names(colors_, services.hosts)),
        backend_(&services.backend) {}

  CollectiveSweepResult run();

 private:
  bool root() const { return services_.bootstrap.rank() == 0; }
  void split_into_groups();
  void start_report();
  std::vector<SeriesSpec> series_of(const Collective& collective) const;
  bool run_collective(const Collective& collective);
  bool run_series(const Collective& collective, const SeriesSpec& spec);
  // The whole array a size moves once rounded to whole elements per rank
  // (the size column); 0 under one element per rank.
  std::size_t bytes_moved(const Collective& collective, const CollectiveCase& c, std::size_t bytes_asked) const;
  std::unique_ptr<CollectiveBuffers> prepare_buffers(const Collective& collective, const CollectiveCase& c,
                                                     std::string& why_not);
  void warm_up(const Collective& collective, const CollectiveCase& c, const SeriesKey& key, CollectiveBuffers& buffers);
  bool run_size(const Collective& collective, const CollectiveCase& c, const SeriesKey& key, CollectiveBuffers* buffers,
                const std::string& why_not, std::size_t bytes_asked);
  void record_skipped(const Collective& collective, const CollectiveCase& c, const SeriesKey& key,
                      const CollectiveCounts& counts, std::size_t bytes_asked, const std::string& reason);
  GatheredPoint measure(const Collective& collective, CollectiveBuffers& buffers, const CollectiveCase& c,
                        std::size_t count, const CollectiveCounts& counts, bool in_place, const std::string& label);
  std::vector<Row> layout_rows(const Collective& collective, const CollectiveCase& c, const CollectiveCounts& counts,
                               const GatheredPoint& side, bool in_place) const;
  void record_measured(const Collective& collective, const CollectiveCase& c, const SeriesKey& key,
                       const CollectiveCounts& counts, const GatheredPoint (&sides)[2]);
  CollectiveSweepResult conclude(bool interrupted);

  const CollectiveSweepOptions& options_;
  SweepServices& services_;
  std::vector<int> colors_;                 // per global rank: its --split group
  std::map<int, std::string> group_hosts_;  // group -> "a+b"
  std::unique_ptr<Backend> group_backend_;  // --split
  Backend* backend_;                        // where the points run
  std::optional<SweepTable> table_;         // rank 0
  std::uint64_t seed_ = 0x5eed;
};

// --split: every group its own communicator. Rooted collectives run inside
// each group, so a root must exist there.
void Sweep::split_into_groups() {
  check_split_groups(colors_, services_.hosts, options_.split);
  const auto groups = static_cast<int>(std::set<int>(colors_.begin(), colors_.end()).size());
  const int group_ranks = services_.backend.size() / groups;
  const bool rooted = std::any_of(options_.collectives.begin(), options_.collectives.end(),
                                  [](const Collective* c) { return c->uses_root(); });
  for (int root_rank : options_.roots)
    if (rooted && root_rank >= group_ranks)
      throw UsageError("-r", std::to_string(root_rank),
                       "--split groups have only " + std::to_string(group_ranks) + " ranks each");
  services_.faults.before_stage(RunStage::split);
  services_.watchdog.enter("communicator split (--split)");
  group_backend_ = services_.backend.split(colors_[static_cast<std::size_t>(services_.bootstrap.rank())],
                                           services_.bootstrap.rank());
  services_.watchdog.leave();
  services_.watchdog.set_abort_operations([&world = services_.backend, &group = group_backend_] {
    group->abort();
    world.abort();
  });
  backend_ = group_backend_.get();
}

void Sweep::start_report() { start_sweep_report(options_, services_, table_ ? &*table_ : nullptr); }

// Collectives without an op run once (as sum); without a root, once (-1).
std::vector<SeriesSpec> Sweep::series_of(const Collective& collective) const {
  const std::vector<ReduceOp> ops = collective.uses_op() ? options_.ops : std::vector<ReduceOp>{ReduceOp::sum};
  std::vector<int> roots = {-1};
  if (collective.uses_root()) {
    roots = options_.roots;
    if (roots.empty())
      for (int r = 0; r < backend_->size(); ++r) roots.push_back(r);
  }
  std::vector<SeriesSpec> series;
  for (DataType type : options_.types)
    for (ReduceOp op : ops)
      for (int root_rank : roots) series.push_back({type, op, root_rank});
  return series;
}

// Buffers for the largest size, or why not. Every rank must agree, or the
// ones that go on would wait forever.
std::unique_ptr<CollectiveBuffers> Sweep::prepare_buffers(const Collective& collective, const CollectiveCase& c,
                                                          std::string& why_not) {
  const std::size_t max_bytes = options_.sizes.empty() ? 0 : options_.sizes.back();
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
  const std::vector<char> all_ready = services_.bootstrap.all_gather(&ready, sizeof ready);
  for (int r = 0; r < services_.bootstrap.size() && why_not.empty(); ++r) {
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
  services_.faults.before_stage(RunStage::warmup);
  services_.record.begin_point(series_row(collective, c));
  services_.watchdog.enter(key.text() + " warm-up");
  services_.bootstrap.barrier();
  warm_up_series(*backend_, collective, buffers, options_.sizes.front() / element, options_.sizes.back() / element, c,
                 options_.point.warmup_iterations);
  services_.watchdog.leave();
  services_.record.end_point();
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
  if (buffers && !options_.sizes.empty() && options_.point.warmup_iterations > 0) warm_up(collective, c, key, *buffers);
  std::size_t previous_moved = 0;
  for (std::size_t bytes_asked : options_.sizes) {
    // Sizes that round to the same whole elements (8 to 11 bytes of float:
    // two) are one case: measured once, so a case key has one row per layout.
    const std::size_t moved = bytes_moved(collective, c, bytes_asked);
    if (moved != 0 && moved == previous_moved) continue;
    previous_moved = moved;
    if (!run_size(collective, c, key, buffers.get(), why_not, bytes_asked)) return false;
  }
  return true;
}

std::size_t Sweep::bytes_moved(const Collective& collective, const CollectiveCase& c, std::size_t bytes_asked) const {
  const std::size_t element = info(c.type).bytes;
  const CollectiveCounts counts = collective.counts(bytes_asked / element, backend_->size(), element);
  return counts.param_count == 0 ? 0 : std::max(counts.send_count, counts.recv_count) * element;
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
    if (root()) record_skipped(collective, c, key, counts, bytes_asked, skip);
    return true;
  }
  // The size column is the whole array the collective moves (nccl-tests).
  const std::size_t bytes = bytes_moved(collective, c, bytes_asked);
  services_.faults.before_point(bytes);
  const std::string label = key.text() + " " + format_size(bytes);
  GatheredPoint sides[2];
  sides[0] = measure(collective, *buffers, c, count, counts, false, label + " out-of-place");
  // Measured: a failure in the in-place half saves it.
  if (root()) services_.record.hold(layout_rows(collective, c, counts, sides[0], false));
  services_.faults.before_in_place(bytes);
  sides[1] = measure(collective, *buffers, c, count, counts, true, label + " in-place");
  if (root()) services_.record.hold({});
  // Ctrl-C anywhere: every rank learned it in the same gather, so all stop here together.
  if (sides[0].interrupted || sides[1].interrupted) {
    if (root()) table_->interrupted();
    return false;
  }
  if (root()) record_measured(collective, c, key, counts, sides);
  return true;
}

// The bytes and count a measured row of this size would have, so a size
// skipped here (out of memory, a type the backend lacks) and measured
// elsewhere is one case; a size with no whole element per rank keeps the
// bytes asked, with its count of 0.
void Sweep::record_skipped(const Collective& collective, const CollectiveCase& c, const SeriesKey& key,
                           const CollectiveCounts& counts, std::size_t bytes_asked, const std::string& reason) {
  const std::size_t bytes = counts.param_count == 0 ? bytes_asked : bytes_moved(collective, c, bytes_asked);
  table_->skipped(bytes, counts.param_count, key, reason);
  for (bool in_place : {false, true})
    services_.record.add(skipped_row(point_row(collective, bytes, counts.param_count, c, in_place), reason));
}

// One layout of one size on every rank. The point covers the barrier and the
// gathers after it: a rank that hangs or dies anywhere in it is named, not
// waited for.
GatheredPoint Sweep::measure(const Collective& collective, CollectiveBuffers& buffers, const CollectiveCase& c,
                             std::size_t count, const CollectiveCounts& counts, bool in_place,
                             const std::string& label) {
  const std::size_t bytes = std::max(counts.send_count, counts.recv_count) * info(c.type).bytes;
  services_.record.begin_point(point_row(collective, bytes, counts.param_count, c, in_place));
  services_.watchdog.enter(label);
  PointSettings settings = options_.point;
  settings.arrival_pass = options_.per_rank;
  // All ranks start the point together, and meet again right before the
  // clock starts (outside the timed region), as nccl-tests does.
  settings.sync_ranks = [this] { services_.bootstrap.barrier(); };
  services_.bootstrap.barrier();
  const PointMeasurement m =
      measure_point(*backend_, collective, buffers, count, c, in_place, settings, services_.faults);
  const GatherSettings gather{options_.average, options_.point.per_iteration, options_.per_rank, options_.outlier_pct,
                              services_.backend.local_ranks()};
  GatheredPoint point =
      gather_point(services_.bootstrap, m, colors_, interrupted(), collective, bytes, services_.hosts, gather);
  services_.watchdog.leave();
  services_.record.end_point();
  return point;
}

// One layout of a measured size: a row per group.
std::vector<Row> Sweep::layout_rows(const Collective& collective, const CollectiveCase& c,
                                    const CollectiveCounts& counts, const GatheredPoint& side, bool in_place) const {
  const std::size_t bytes = std::max(counts.send_count, counts.recv_count) * info(c.type).bytes;
  const std::size_t count = counts.param_count;  // what each rank passes to the call
  const bool split = options_.split != SplitMode::none;
  std::vector<Row> rows;
  for (const GroupResult& group : side.groups)
    rows.push_back(measured_row(point_row(collective, bytes, count, c, in_place), group, options_.point.per_iteration,
                                split ? &group_hosts_.at(group.color) : nullptr));
  return rows;
}

void Sweep::record_measured(const Collective& collective, const CollectiveCase& c, const SeriesKey& key,
                            const CollectiveCounts& counts, const GatheredPoint (&sides)[2]) {
  const std::size_t bytes = std::max(counts.send_count, counts.recv_count) * info(c.type).bytes;
  const std::size_t count = counts.param_count;
  table_->measured(bytes, count, key, sides, options_.point.per_iteration, options_.per_rank);
  const std::vector<Row> layouts[2] = {layout_rows(collective, c, counts, sides[0], false),
                                       layout_rows(collective, c, counts, sides[1], true)};
  for (std::size_t g = 0; g < layouts[0].size(); ++g)
    for (const std::vector<Row>& layout : layouts) services_.record.add(layout[g]);
  // --per-rank-csv: the arrival pass runs out of place.
  if (options_.per_rank)
    for (int r = 0; r < static_cast<int>(sides[0].late_s.size()); ++r)
      services_.record.add_per_rank(
          arrival_row(point_row(collective, bytes, count, c, false), sides[0], r, services_.hosts[r]));
}

// The summary happens on rank 0; then every rank learns the verdict, so all
// exit alike.
CollectiveSweepResult Sweep::conclude(bool interrupted) {
  CollectiveSweepResult result;
  result.interrupted = interrupted;
  std::int32_t verdict[3] = {0, 0, 0};  // wrong values, below expectation, nothing measured
  if (root()) {
    SummaryOptions options;
    options.checked = options_.point.check_iterations > 0;
    options.single_rank = backend_->size() == 1;
    options.interrupted = interrupted;
    options.expect_busbw_GBps = options_.expect_busbw_GBps;
    options.outlier_pct = options_.outlier_pct;
    options.split = options_.split != SplitMode::none;
    options.per_rank = options_.per_rank;
    const SweepSummary summary = summarize_sweep(services_.record.rows(), services_.record.per_rank_rows(), options);
    table_->summary(summary);
    for (const auto& [key, value] : summary.entries) services_.record.add_summary(key, value);
    result.wrong = summary.wrong;
    verdict[0] = summary.wrong > 0;
    verdict[1] = summary.below_expectation;
    verdict[2] = summary.nothing_measured;
  }
  services_.bootstrap.broadcast(verdict, sizeof verdict, 0);
  if (!root()) result.wrong = static_cast<std::uint64_t>(verdict[0]);
  result.below_expectation = verdict[1] != 0;
  result.nothing_measured = verdict[2] != 0;
  return result;
}

CollectiveSweepResult Sweep::run() {
  const AbortWorldOnlyOnExit restore_abort{services_};  // before the group communicator goes
  if (options_.split != SplitMode::none) split_into_groups();
  if (root()) table_.emplace(services_.out, group_hosts_, options_.split != SplitMode::none);
  start_report();
  bool interrupted = false;
  for (const Collective* collective : options_.collectives)
    if (!run_collective(*collective)) {
      interrupted = true;
      break;
    }
  return conclude(interrupted);
}

}  // namespace

void start_sweep_report(const CollectiveSweepOptions& options, SweepServices& services, SweepTable* table) {
  Backend& world = services.backend;
  const std::string hosts = describe_hosts(services.hosts);
  services.record.add_summary("backend", world.name() + ", bootstrap " + services.bootstrap.kind());
  services.record.add_summary("ranks", std::to_string(world.size()) + " (" +
                                           std::to_string(services.bootstrap.size()) + " processes x " +
                                           std::to_string(world.local_ranks()) + " local)");
  services.record.add_summary("hosts", hosts);
  if (!table) return;
  SweepHeader header;
  header.tool = options.tool;
  header.backend = world.name();
  header.bootstrap = services.bootstrap.kind();
  header.ranks = world.size();
  header.hosts = hosts;
  if (options.point.check_iterations > 0) header.checked_types = options.types;
  header.split = options.split;
  table->header(header, services.record.report().env);
}

CollectiveSweepResult run_collective_sweep(const CollectiveSweepOptions& options, SweepServices& services) {
  if (options.split == SplitMode::automatic) {
    std::optional<SweepTable> table;
    if (services.bootstrap.rank() == 0) table.emplace(services.out, std::map<int, std::string>{}, true);
    start_sweep_report(options, services, table ? &*table : nullptr);
    const SplitAutoResult diagnosis = run_split_auto(options, services);
    CollectiveSweepResult result;
    result.wrong = diagnosis.wrong;
    result.named_culprit = diagnosis.named;
    result.interrupted = diagnosis.interrupted;
    return result;
  }
  return Sweep(options, services).run();
}

}  // namespace redline
