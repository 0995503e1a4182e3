#include "collectives/diagnosis/split_diagnosis.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "harness/core/units.hpp"
#include "harness/measure/stats.hpp"

namespace redline {
namespace {

double median_of(std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }), values.end());
  return values.empty() ? NAN : summarize(values).median;
}

// Size by size, the median over `groups` (skipping `except`, -1 for none).
GroupBusbw median_by_size(const std::vector<GroupBusbw>& groups, int except) {
  GroupBusbw median;
  const std::size_t sizes = groups.empty() ? 0 : groups.front().size();
  for (std::size_t s = 0; s < sizes; ++s) {
    std::vector<double> values;
    for (int g = 0; g < static_cast<int>(groups.size()); ++g)
      if (g != except) values.push_back(groups[static_cast<std::size_t>(g)][s]);
    median.push_back(median_of(values));
  }
  return median;
}

// The median over sizes of busbw / reference: how the group reads at most
// sizes, so one noisy size neither names nor clears it.
double ratio_to(const GroupBusbw& busbw, const GroupBusbw& reference) {
  std::vector<double> ratios;
  for (std::size_t s = 0; s < busbw.size() && s < reference.size(); ++s)
    if (reference[s] > 0) ratios.push_back(busbw[s] / reference[s]);
  return median_of(ratios);
}

constexpr int kAloneTries = 5;  // a group alone: its best of five

std::string percent(double ratio) { return format_significant(100 * ratio, 3) + "%"; }

}  // namespace

std::string diagnosis_stage_name(DiagnosisStage stage) {
  switch (stage) {
    case DiagnosisStage::inside_nodes: return "inside each node";
    case DiagnosisStage::pairs: return "pairs of nodes";
    case DiagnosisStage::new_pairs: return "new pairs";
    case DiagnosisStage::control: return "a healthy group alone";
    case DiagnosisStage::confirm: return "again, alone";
  }
  return "?";
}

SplitDiagnosis::SplitDiagnosis(std::vector<std::string> nodes, int ranks_per_node, double outlier_pct)
    : nodes_(std::move(nodes)), ranks_per_node_(ranks_per_node), threshold_(1 - outlier_pct / 100) {
  const int n = static_cast<int>(nodes_.size());
  if (n < 2) return;
  if (ranks_per_node_ >= 2) {
    DiagnosisRound inside{DiagnosisStage::inside_nodes, {}, "each node's own ranks, every node at once"};
    for (int i = 0; i < n; ++i) inside.groups.push_back({i});
    pending_.push_back(inside);
  }
  DiagnosisRound pairs{DiagnosisStage::pairs, {}, "pairs of nodes, every pair at once"};
  for (int i = 0; i + 1 < n; i += 2) pairs.groups.push_back({i, i + 1});
  if (n % 2 == 1) pairs.purpose += " (" + nodes_.back() + " waits for a new pair)";
  pending_.push_back(pairs);
}

std::string SplitDiagnosis::nothing_to_split() const {
  if (nodes_.size() >= 2) return "";
  return "one node (" + (nodes_.empty() ? std::string("?") : nodes_.front()) +
         "): nothing to split; run across nodes to tell a node from its links";
}

std::string node_group_name(const std::vector<std::string>& nodes, const std::vector<int>& group) {
  std::string name;
  for (const int n : group) name += (name.empty() ? "" : "+") + nodes[static_cast<std::size_t>(n)];
  return name;
}

std::optional<DiagnosisRound> SplitDiagnosis::next_round() {
  if (in_flight_) throw std::logic_error("split diagnosis: the last round was not recorded");
  if (!pending_.empty()) {
    in_flight_ = pending_.front();
    pending_.erase(pending_.begin());
    return in_flight_;
  }
  if (!node_candidates_gathered_) gather_node_candidates();
  if (next_confirmation_ >= candidates_.size() && !inside_checks_gathered_) gather_inside_checks();
  if (next_confirmation_ >= candidates_.size() && !link_candidates_gathered_) gather_link_candidates();
  if (next_confirmation_ >= candidates_.size()) return std::nullopt;
  const Candidate& c = candidates_[next_confirmation_];
  // A suspect alone is compared with a healthy group alone, measured first:
  // like with like, whatever groups running at once share.
  if (!alone_reference_.count(c.reference))
    if (const auto control = control_group(c.reference)) {
      in_flight_ = DiagnosisRound{DiagnosisStage::control, {*control},
                                  group_name(*control) + " alone: what a healthy group reads alone", kAloneTries};
      control_for_ = c.reference;
      return in_flight_;
    }
  const std::string question = c.purpose == Candidate::Purpose::inside_check
                                   ? " alone: is the node itself slow, or only its network?"
                                   : " alone: does " + group_name(c.finding.nodes) + " reproduce?";
  in_flight_ = DiagnosisRound{DiagnosisStage::confirm, {c.group}, group_name(c.group) + question, kAloneTries};
  return in_flight_;
}

// A group of `kind` that read healthy and is no suspect: an unflagged node
// (inside), or an unflagged pair. A suspicion already cleared alone is none:
// else one noisy first reading leaves no healthy pair to be the reference,
// and a suspect alone is set against groups that ran at once, which read
// lower (that cleared a lossy node in the emulated cluster).
std::optional<std::vector<int>> SplitDiagnosis::control_group(DiagnosisStage kind) const {
  const auto suspect = [this](int node) {
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      const std::vector<int>& nodes = candidates_[i].finding.nodes;
      if (!cleared_candidates_.count(i) && std::find(nodes.begin(), nodes.end(), node) != nodes.end()) return true;
    }
    return false;
  };
  for (const RoundReport& r : reports_)
    if (r.round.stage == kind)
      for (const GroupVerdict& v : r.groups)
        if (!v.slow && std::none_of(v.nodes.begin(), v.nodes.end(), suspect)) return v.nodes;
  return std::nullopt;
}

void SplitDiagnosis::record(const std::vector<GroupBusbw>& measured) {
  if (!in_flight_) throw std::logic_error("split diagnosis: no round to record");
  if (measured.size() != in_flight_->groups.size()) throw std::logic_error("split diagnosis: one busbw per group");
  const DiagnosisRound round = *in_flight_;
  in_flight_.reset();
  RoundReport report{static_cast<int>(reports_.size()) + 1, round, judge(round, measured)};
  reports_.push_back(report);
  std::vector<GroupBusbw> healthy;
  for (const GroupVerdict& v : report.groups)
    if (!v.slow) healthy.push_back(v.busbw);
  if (round.stage == DiagnosisStage::inside_nodes) inside_reference_ = median_by_size(healthy, -1);
  if (round.stage == DiagnosisStage::pairs) {
    pair_reference_ = median_by_size(healthy, -1);
    plan_new_pairs();
  }
  if (round.stage == DiagnosisStage::control) alone_reference_[control_for_] = measured.front();
  if (round.stage == DiagnosisStage::confirm) judge_confirmation(report.groups.front());
}

std::vector<GroupVerdict> SplitDiagnosis::judge(const DiagnosisRound& round, const std::vector<GroupBusbw>& measured) {
  const bool first_of_kind = round.stage == DiagnosisStage::inside_nodes || round.stage == DiagnosisStage::pairs;
  GroupBusbw later_reference = pair_reference_;
  if (round.stage == DiagnosisStage::confirm) {
    const DiagnosisStage kind = candidates_[next_confirmation_].reference;
    if (alone_reference_.count(kind))
      later_reference = alone_reference_.at(kind);
    else if (kind == DiagnosisStage::inside_nodes)
      later_reference = inside_reference_;
  }
  std::vector<GroupVerdict> verdicts;
  for (std::size_t g = 0; g < measured.size(); ++g) {
    GroupVerdict v{round.groups[g], measured[g], NAN, false};
    // Alone in its first round, a group has nothing to be compared with; a
    // control is the reference itself.
    if (round.stage != DiagnosisStage::control && (!first_of_kind || measured.size() >= 2))
      v.ratio = ratio_to(measured[g], first_of_kind ? median_by_size(measured, static_cast<int>(g)) : later_reference);
    v.slow = std::isfinite(v.ratio) && v.ratio < threshold_;
    verdicts.push_back(v);
  }
  return verdicts;
}

// Each node of a slow pair, and a node the pairs left out, with a node of a
// healthy pair: as many at once as there are healthy nodes.
void SplitDiagnosis::plan_new_pairs() {
  std::vector<int> suspects, healthy;
  const RoundReport& pairs = reports_.back();
  for (const GroupVerdict& v : pairs.groups)
    for (const int node : v.nodes) (v.slow ? suspects : healthy).push_back(node);
  if (nodes_.size() % 2 == 1) suspects.push_back(static_cast<int>(nodes_.size()) - 1);
  if (suspects.empty() || healthy.empty()) return;
  for (std::size_t first = 0; first < suspects.size(); first += healthy.size()) {
    DiagnosisRound round{DiagnosisStage::new_pairs, {}, "each suspect with a node of a healthy pair"};
    for (std::size_t i = first; i < suspects.size() && i < first + healthy.size(); ++i)
      round.groups.push_back({suspects[i], healthy[i - first]});
    pending_.push_back(round);
  }
}

std::optional<GroupVerdict> SplitDiagnosis::verdict_of(DiagnosisStage stage, const std::vector<int>& group) const {
  for (const RoundReport& r : reports_)
    if (r.round.stage == stage)
      for (const GroupVerdict& v : r.groups)
        if (v.nodes == group) return v;
  return std::nullopt;
}

bool SplitDiagnosis::slow_inside(int node) const {
  const auto v = verdict_of(DiagnosisStage::inside_nodes, {node});
  return v && v->slow;
}

std::string SplitDiagnosis::round_of(DiagnosisStage stage, const std::vector<int>& group) const {
  for (const RoundReport& r : reports_)
    if (r.round.stage == stage)
      for (const GroupVerdict& v : r.groups)
        if (v.nodes == group) return std::to_string(r.number);
  return "?";
}

std::string SplitDiagnosis::said(DiagnosisStage stage, const GroupVerdict& v, const std::string& against) const {
  return group_name(v.nodes) + " at " + percent(v.ratio) + " of " + against + " (round " + round_of(stage, v.nodes) +
         ")";
}

// A node's new pairing: the group of the new-pairs rounds that holds it (suspects come first).
std::optional<GroupVerdict> SplitDiagnosis::new_pairing(int node) const {
  for (const RoundReport& r : reports_)
    if (r.round.stage == DiagnosisStage::new_pairs)
      for (const GroupVerdict& v : r.groups)
        if (v.nodes.front() == node) return v;
  return std::nullopt;
}

std::vector<std::vector<int>> SplitDiagnosis::slow_pairs() const {
  std::vector<std::vector<int>> pairs;
  for (const RoundReport& r : reports_)
    if (r.round.stage == DiagnosisStage::pairs)
      for (const GroupVerdict& v : r.groups)
        if (v.slow) pairs.push_back(v.nodes);
  return pairs;
}

// The first suspects to run again alone: nodes slow on their own, and nodes
// slow with a healthy partner too.
void SplitDiagnosis::gather_node_candidates() {
  node_candidates_gathered_ = true;
  for (int node = 0; node < static_cast<int>(nodes_.size()); ++node)
    if (slow_inside(node)) {
      const GroupVerdict v = *verdict_of(DiagnosisStage::inside_nodes, {node});
      candidates_.push_back({{DiagnosisFinding::Kind::node_inside, {node},
                              "its own ranks together: " + said(DiagnosisStage::inside_nodes, v, "the other nodes'")},
                             {node}, DiagnosisStage::inside_nodes, v.ratio});
    }
  std::vector<std::vector<int>> suspects = slow_pairs();
  if (nodes_.size() % 2 == 1) suspects.push_back({static_cast<int>(nodes_.size()) - 1});  // the odd node
  for (const std::vector<int>& pair : suspects) {
    const auto first = verdict_of(DiagnosisStage::pairs, pair);
    for (const int node : pair) {
      const auto again = new_pairing(node);
      if (!again) {
        if (first) not_reproduced_.push_back(group_name(pair) + ": slow, but no node of a healthy pair to pair it with");
        continue;
      }
      if (!again->slow) continue;
      std::string evidence = first ? said(DiagnosisStage::pairs, *first, "the healthy pairs'") + "; " : "";
      evidence += said(DiagnosisStage::new_pairs, *again, "the healthy pairs'");
      candidates_.push_back(
          {{DiagnosisFinding::Kind::node_network, {node}, evidence}, again->nodes, DiagnosisStage::pairs, again->ratio});
    }
  }
}

// A node slow on its own is slow in every pairing: one that read healthy with
// a healthy partner (or was cleared alone with it) is not named for its own
// ranks, whose slow reading was then the machine's, not the node's.
void SplitDiagnosis::withdraw_inside_findings_healthy_across() {
  for (auto f = findings_.begin(); f != findings_.end();) {
    const int node = f->nodes.front();
    const auto pairing = f->kind == DiagnosisFinding::Kind::node_inside ? new_pairing(node) : std::nullopt;
    const auto cleared = cleared_alone_.find(node);
    if (!pairing || (pairing->slow && cleared == cleared_alone_.end())) {
      ++f;
      continue;
    }
    not_reproduced_.push_back(group_name(f->nodes) + ": its own ranks read slow (" + f->evidence +
                              "), but it is healthy with another node (" +
                              (cleared != cleared_alone_.end() ? cleared->second
                                                               : said(DiagnosisStage::new_pairs, *pairing,
                                                                      "the healthy pairs'")) +
                              ")");
    f = findings_.erase(f);
  }
}

// Once the nodes are judged: a slow pair neither of whose nodes was named
// points at the link between them. A node slow on its own is slow in every
// pairing, so it is never taken for its link.
void SplitDiagnosis::gather_link_candidates() {
  link_candidates_gathered_ = true;
  withdraw_inside_findings_healthy_across();
  const auto named = [this](int node) {
    return std::any_of(findings_.begin(), findings_.end(),
                       [node](const DiagnosisFinding& f) { return f.kind != DiagnosisFinding::Kind::link && f.nodes == std::vector<int>{node}; });
  };
  for (const std::vector<int>& pair : slow_pairs()) {
    if (named(pair[0]) || named(pair[1]) || !new_pairing(pair[0]) || !new_pairing(pair[1])) continue;
    const GroupVerdict first = *verdict_of(DiagnosisStage::pairs, pair);
    std::string ends;
    for (const int node : pair) {
      const GroupVerdict again = *new_pairing(node);
      ends += (ends.empty() ? "" : ", ") + said(DiagnosisStage::new_pairs, again, "the healthy pairs'");
      if (const auto alone = cleared_alone_.find(node); alone != cleared_alone_.end()) ends += ", then " + alone->second;
    }
    candidates_.push_back({{DiagnosisFinding::Kind::link, pair,
                            said(DiagnosisStage::pairs, first, "the healthy pairs'") +
                                "; neither end is slow with another node (" + ends + ")"},
                           pair, DiagnosisStage::pairs, first.ratio});
  }
}

// A node named over the network, when nodes have several ranks: its own
// ranks alone, against a healthy node's alone, tell whether the node itself
// is slow (a CPU, memory or PCIe problem shows in every pairing too).
void SplitDiagnosis::gather_inside_checks() {
  inside_checks_gathered_ = true;
  if (ranks_per_node_ < 2) return;
  for (const DiagnosisFinding& f : findings_)
    if (f.kind == DiagnosisFinding::Kind::node_network)
      candidates_.push_back({f, f.nodes, DiagnosisStage::inside_nodes, NAN, Candidate::Purpose::inside_check});
}

void SplitDiagnosis::judge_confirmation(const GroupVerdict& verdict) {
  const Candidate c = candidates_[next_confirmation_++];
  const std::string alone = group_name(verdict.nodes) + " alone at " + percent(verdict.ratio) + " of a healthy " +
                            (c.reference == DiagnosisStage::inside_nodes ? "node's" : "pair's") +
                            (alone_reference_.count(c.reference) ? " alone" : "") + " (round " +
                            std::to_string(reports_.back().number) + ")";
  if (c.purpose == Candidate::Purpose::inside_check) {
    for (DiagnosisFinding& named : findings_)
      if (named.kind == DiagnosisFinding::Kind::node_network && named.nodes == c.finding.nodes) {
        if (verdict.slow) named.kind = DiagnosisFinding::Kind::node_inside;
        named.evidence += "; its own ranks: " + alone;
      }
    return;
  }
  if (verdict.slow) {
    DiagnosisFinding finding = c.finding;
    finding.evidence += "; " + alone;
    // A node slow inside is slow across too: one finding, with both evidences.
    for (DiagnosisFinding& named : findings_)
      if (named.kind == DiagnosisFinding::Kind::node_inside && named.nodes == finding.nodes) {
        named.evidence += "; across nodes too: " + finding.evidence;
        return;
      }
    findings_.push_back(finding);
    return;
  }
  not_reproduced_.push_back(group_name(c.finding.nodes) + ": slow at first (" + percent(c.ratio) + "), not again: " +
                            alone);
  cleared_candidates_.insert(next_confirmation_ - 1);
  if (c.finding.kind == DiagnosisFinding::Kind::node_network) cleared_alone_[c.finding.nodes.front()] = alone;
}

}  // namespace redline
