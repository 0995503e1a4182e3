#include "collectives/diagnosis/split_auto.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "collectives/diagnosis/split_diagnosis.hpp"
#include "collectives/sweep/sweep_rows.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline {
namespace {

// The nodes in order of first appearance, each rank's node, and the ranks per node.
struct NodeLayout {
  std::vector<std::string> nodes;
  std::vector<int> node_of_rank;
  int ranks_per_node = 0;
};

NodeLayout node_layout(const std::vector<std::string>& hosts) {
  NodeLayout layout;
  std::map<std::string, int> index;
  std::vector<int> ranks;
  for (const std::string& host : hosts) {
    const auto [it, added] = index.emplace(host, static_cast<int>(layout.nodes.size()));
    if (added) {
      layout.nodes.push_back(host);
      ranks.push_back(0);
    }
    layout.node_of_rank.push_back(it->second);
    ++ranks[static_cast<std::size_t>(it->second)];
  }
  layout.ranks_per_node = ranks.empty() ? 0 : ranks.front();
  for (std::size_t n = 0; n < ranks.size(); ++n)
    if (ranks[n] != layout.ranks_per_node)
      throw UsageError("--split", "auto",
                       "needs the same number of ranks on every node; " + layout.nodes.front() + " has " +
                           std::to_string(layout.ranks_per_node) + ", " + layout.nodes[n] + " has " +
                           std::to_string(ranks[n]));
  return layout;
}

// What a round measured, on rank 0: each group's busbw per size.
struct RoundFigures {
  std::vector<GroupBusbw> busbw;
  bool interrupted = false;
};

class AutoSplit {
 public:
  AutoSplit(const CollectiveSweepOptions& options, SweepServices& services)
      : options_(options), services_(services), layout_(node_layout(services.hosts)) {}

  SplitAutoResult run();

 private:
  bool root() const { return services_.bootstrap.rank() == 0; }
  // "n3+n4": the group's hosts, as its rows and lines name it.
  std::string nodes_name(const std::vector<int>& nodes) const { return node_group_name(layout_.nodes, nodes); }
  std::vector<std::int32_t> share_round(SplitDiagnosis& diagnosis, std::optional<DiagnosisRound>& round);
  RoundFigures measure_round(int number, const std::vector<int>& colors, const DiagnosisRound* round, int tries);
  void measure_size(int number, Backend* group, CollectiveBuffers* buffers, const std::vector<int>& colors,
                    const CollectiveCase& c, std::size_t bytes_asked, const DiagnosisRound* round, int tries,
                    RoundFigures& figures);
  void print_round(const RoundReport& report) const;
  SplitAutoResult conclude(const SplitDiagnosis& diagnosis, bool interrupted);

  const CollectiveSweepOptions& options_;
  SweepServices& services_;
  NodeLayout layout_;
  std::uint64_t wrong_ = 0;
  std::uint64_t seed_ = 0xa070;
  const Collective& collective() const { return *options_.collectives.front(); }
  DataType type() const { return options_.types.front(); }
  ReduceOp op() const { return collective().uses_op() ? options_.ops.front() : ReduceOp::sum; }
};

// Rank 0 decides the round; every rank learns its group: [tries per size (0:
// no more rounds), color per rank (-1: sits it out)].
std::vector<std::int32_t> AutoSplit::share_round(SplitDiagnosis& diagnosis, std::optional<DiagnosisRound>& round) {
  std::vector<std::int32_t> message(services_.hosts.size() + 1, -1);
  if (root()) {
    round = diagnosis.next_round();
    message[0] = round ? round->tries : 0;
    if (round)
      for (std::size_t r = 0; r < layout_.node_of_rank.size(); ++r)
        for (std::size_t g = 0; g < round->groups.size(); ++g)
          for (const int node : round->groups[g])
            if (node == layout_.node_of_rank[r]) message[r + 1] = static_cast<std::int32_t>(g);
  }
  services_.bootstrap.broadcast(message.data(), message.size() * sizeof(std::int32_t), 0);
  return message;
}

RoundFigures AutoSplit::measure_round(int number, const std::vector<int>& colors, const DiagnosisRound* round,
                                      int tries) {
  Bootstrap& bootstrap = services_.bootstrap;
  const std::string label = "--split auto round " + std::to_string(number);
  const int color = colors[static_cast<std::size_t>(bootstrap.rank())];
  services_.watchdog.enter(label + ": communicator split");
  const std::unique_ptr<Backend> group = services_.backend.split(color, bootstrap.rank());
  services_.watchdog.leave();
  services_.watchdog.set_abort_operations([&world = services_.backend, &group] {
    if (group) group->abort();
    world.abort();
  });
  const AbortWorldOnlyOnExit restore_abort{services_};  // before the round's communicator goes
  const int first_color = *std::max_element(colors.begin(), colors.end());
  const int group_ranks = static_cast<int>(std::count(colors.begin(), colors.end(), first_color));
  const CollectiveCase c{type(), op(), 0, group_ranks, ++seed_};
  std::unique_ptr<CollectiveBuffers> buffers;
  if (group)
    buffers = std::make_unique<CollectiveBuffers>(*group, collective(), options_.sizes.back() / info(type()).bytes,
                                                  type());
  if (options_.point.warmup_iterations > 0) {
    services_.watchdog.enter(label + " warm-up");
    bootstrap.barrier();
    const std::size_t element = info(type()).bytes;
    if (group)
      warm_up_series(*group, collective(), *buffers, options_.sizes.front() / element, options_.sizes.back() / element,
                     c, options_.point.warmup_iterations);
    bootstrap.idle_barrier();
    services_.watchdog.leave();
  }
  RoundFigures figures;
  if (round) figures.busbw.assign(round->groups.size(), {});
  for (const std::size_t bytes : options_.sizes) {
    measure_size(number, group.get(), buffers.get(), colors, c, bytes, round, tries, figures);
    if (figures.interrupted) break;
  }
  return figures;
}

// One size: the groups at work measure it at once, `tries` times, and each
// group's best try counts (noise only ever slows); the others wait without
// spinning.
void AutoSplit::measure_size(int number, Backend* group, CollectiveBuffers* buffers, const std::vector<int>& colors,
                             const CollectiveCase& c, std::size_t bytes_asked, const DiagnosisRound* round, int tries,
                             RoundFigures& figures) {
  Bootstrap& bootstrap = services_.bootstrap;
  const std::size_t element = info(c.type).bytes;
  const std::size_t count = bytes_asked / element;
  const CollectiveCounts counts = collective().counts(count, c.nranks, element);
  if (counts.param_count == 0) {  // the same on every rank: under one element per rank
    for (GroupBusbw& busbw : figures.busbw) busbw.push_back(NAN);
    return;
  }
  const std::size_t bytes = std::max(counts.send_count, counts.recv_count) * element;
  const Row point = point_row(collective(), bytes, counts.param_count, c, false);
  std::map<int, GroupResult> best;          // rank 0: each group's best try
  std::map<int, std::uint64_t> wrong;       // and its wrong values over every try
  for (int t = 0; t < tries && !figures.interrupted; ++t) {
    services_.record.begin_point(point);
    services_.watchdog.enter("--split auto round " + std::to_string(number) + ": " +
                             series_key(collective(), c.type, c.op, -1).text() + " " + format_size(bytes));
    bootstrap.barrier();
    PointMeasurement m;
    if (group) {
      PointSettings settings = options_.point;
      settings.per_iteration = false;  // one figure per group is what the diagnosis compares
      settings.graph_replays = 0;
      m = measure_point(*group, collective(), *buffers, count, c, false, settings, services_.faults);
    }
    bootstrap.idle_barrier();
    const GatherSettings gather{options_.average, false, false, options_.outlier_pct, services_.backend.local_ranks()};
    const GatheredPoint gathered =
        gather_point(bootstrap, m, colors, interrupted(), collective(), bytes, services_.hosts, gather);
    services_.watchdog.leave();
    services_.record.end_point();
    figures.interrupted = gathered.interrupted;
    for (const GroupResult& g : gathered.groups) {
      wrong[g.color] += g.wrong;
      if (!best.count(g.color) || g.busbw > best[g.color].busbw) best[g.color] = g;
    }
  }
  if (!root() || figures.interrupted) return;
  for (auto& [color, g] : best) {
    g.wrong = wrong[color];
    wrong_ += g.wrong;
    const std::string hosts = nodes_name(round->groups[static_cast<std::size_t>(color)]);
    Row row = measured_row(point, g, false, &hosts);
    row.param("round", std::to_string(number)).param("stage", diagnosis_stage_name(round->stage));
    services_.record.add(row);
    figures.busbw[static_cast<std::size_t>(color)].push_back(g.busbw);
  }
}

void AutoSplit::print_round(const RoundReport& report) const {
  std::ostream& out = services_.out;
  out << "#\n# --split auto round " << report.number << " (" << diagnosis_stage_name(report.round.stage)
      << "): " << report.round.purpose
      << (report.round.tries > 1 ? " (each size " + std::to_string(report.round.tries) + " times, the best counts)" : "")
      << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "#   %-24s", "busbw GB/s at");
  out << line;
  for (const std::size_t bytes : options_.sizes) {
    std::snprintf(line, sizeof line, " %9s", format_size(bytes).c_str());
    out << line;
  }
  out << "   vs reference\n";
  for (const GroupVerdict& v : report.groups) {
    std::snprintf(line, sizeof line, "#   %-24s", nodes_name(v.nodes).c_str());
    out << line;
    for (const double busbw : v.busbw) {
      std::snprintf(line, sizeof line, " %9s", std::isfinite(busbw) ? format_significant(busbw, 3).c_str() : "-");
      out << line;
    }
    const std::string against = report.round.stage == DiagnosisStage::control ? "the reference for groups alone"
                                : std::isfinite(v.ratio)                      ? format_significant(100 * v.ratio, 3) + "%"
                                                                              : "nothing to compare";
    out << "   " << against
        << (v.slow ? "  SLOW" : "") << "\n";
  }
  out << std::flush;
}

std::string finding_text(const SplitDiagnosis& diagnosis, const DiagnosisFinding& f) {
  switch (f.kind) {
    case DiagnosisFinding::Kind::node_inside:
      return "node " + diagnosis.group_name(f.nodes) + ", slow inside the node (its own ranks together: NVLink, "
             "PCIe, memory or CPU)";
    case DiagnosisFinding::Kind::node_network:
      return "node " + diagnosis.group_name(f.nodes) + ", slow over the network (its NIC, cable or switch port)";
    case DiagnosisFinding::Kind::link: break;
  }
  return "the link between " + diagnosis.group_name({f.nodes.front()}) + " and " +
         diagnosis.group_name({f.nodes.back()}) + " (each end is healthy with other nodes)";
}

SplitAutoResult AutoSplit::conclude(const SplitDiagnosis& diagnosis, bool interrupted) {
  std::int32_t verdict[2] = {0, 0};  // wrong values, named
  if (root()) {
    std::ostream& out = services_.out;
    const std::string rounds = std::to_string(diagnosis.rounds().size()) + " rounds";
    std::string named;
    out << "#\n";
    for (const DiagnosisFinding& f : diagnosis.findings()) {
      out << "# NAMED: " << finding_text(diagnosis, f) << ". Evidence: " << f.evidence << "\n";
      named += (named.empty() ? "" : "; ") + finding_text(diagnosis, f);
    }
    for (const std::string& why : diagnosis.not_reproduced()) out << "# not named: " << why << "\n";
    const std::string outcome =
        interrupted ? "interrupted after " + rounds
                    : (named.empty() ? "nothing named" : "named " + std::to_string(diagnosis.findings().size())) +
                          " after " + rounds + " (groups more than " + format_number(options_.outlier_pct, 0) +
                          "% below their reference, and again when run alone)";
    out << "# --split auto: " << outcome << "\n" << std::flush;
    services_.record.add_summary("diagnosis", named.empty() ? "none" : named);
    services_.record.add_summary("diagnosis_rounds", std::to_string(diagnosis.rounds().size()));
    verdict[0] = wrong_ > 0;
    verdict[1] = !named.empty();
  }
  services_.bootstrap.broadcast(verdict, sizeof verdict, 0);
  SplitAutoResult result;
  result.wrong = root() ? wrong_ : static_cast<std::uint64_t>(verdict[0]);
  result.named = verdict[1] != 0;
  result.interrupted = interrupted;
  return result;
}

SplitAutoResult AutoSplit::run() {
  SplitDiagnosis diagnosis(layout_.nodes, layout_.ranks_per_node, options_.outlier_pct);
  if (!diagnosis.nothing_to_split().empty()) {
    if (root()) services_.out << "# --split auto: " << diagnosis.nothing_to_split() << "\n" << std::flush;
    services_.record.add_summary("diagnosis", diagnosis.nothing_to_split());
    return {};
  }
  bool was_interrupted = false;
  for (int number = 1;; ++number) {
    std::optional<DiagnosisRound> round;
    const std::vector<std::int32_t> message = share_round(diagnosis, round);
    if (message[0] == 0) break;
    const std::vector<int> colors(message.begin() + 1, message.end());
    const RoundFigures figures = measure_round(number, colors, round ? &*round : nullptr, message[0]);
    if (figures.interrupted) {
      was_interrupted = true;
      break;
    }
    if (!root()) continue;
    diagnosis.record(figures.busbw);
    print_round(diagnosis.rounds().back());
  }
  return conclude(diagnosis, was_interrupted);
}

}  // namespace

SplitAutoResult run_split_auto(const CollectiveSweepOptions& options, SweepServices& services) {
  return AutoSplit(options, services).run();
}

}  // namespace redline
