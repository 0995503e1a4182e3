// --split auto, the reasoning alone (no I/O, no ranks): which groups of nodes
// each round measures, and what the measured rounds say, ending with names.
//
//   1. inside each node, every node at once (when a node has several ranks):
//      a node slow on its own (NVLink, PCIe, memory, CPU);
//   2. pairs of nodes at once (1+2, 3+4, ...): a slow pair points at two nodes
//      or the link between them;
//   3. each node of a slow pair (and a node left out of the pairs) paired anew
//      with a node of a healthy pair: a node slow in both of its pairings is
//      the suspect; a pair whose nodes are healthy with others points at
//      their link;
//   4. every suspect's slow group is run again alone, against a healthy group
//      of its kind also run alone: only a finding that reproduces is named.
//      Groups that ran at the same time share whatever the nodes share (on an
//      emulated cluster, the CPUs; on a real one, a noisy neighbour), so one
//      slow reading is not evidence;
//   5. a node named over the network has its own ranks run alone: slow, it is
//      the node itself (CPU, memory, PCIe), else its network;
//   6. a node slow on its own ranks but healthy with a healthy partner is not
//      named (a node slow on its own is slow in every pairing);
//   7. a slow pair neither of whose nodes was named: their link.
//
// A group is slow when its busbw is more than the outlier threshold below the
// reference at most sizes (the median over sizes of its ratio to the
// reference). In the first round of a kind the reference is the median of
// the other groups of that round, size by size; new pairs compare with the
// median of the healthy pairs of that first round, and groups run alone with
// a healthy group run alone. The rounds needed do not grow with the node
// count: one of each kind, a re-pairing round for as many suspects as there
// are healthy nodes, a control per kind, and one alone per suspect.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

namespace redline {

enum class DiagnosisStage { inside_nodes, pairs, new_pairs, control, confirm };

// One round's groups, as node indices (in order of first appearance).
struct DiagnosisRound {
  DiagnosisStage stage = DiagnosisStage::pairs;
  std::vector<std::vector<int>> groups;
  std::string purpose;  // what the round is for, one line
  // How many times each size is measured, the best reading counting: noise
  // (a group sharing CPUs, a passing job) only ever slows, so a group alone
  // is judged on its best of five.
  int tries = 1;
};

// A group's busbw, one per size (the sizes every round measures, ascending).
using GroupBusbw = std::vector<double>;

// How one measured group read against its reference.
struct GroupVerdict {
  std::vector<int> nodes;
  GroupBusbw busbw;
  double ratio = 1;  // median over sizes of busbw / reference; NAN with nothing to compare
  bool slow = false;
};

// What a finished round showed, for the report.
struct RoundReport {
  int number = 0;  // from 1
  DiagnosisRound round;
  std::vector<GroupVerdict> groups;
};

// A named culprit, with the evidence.
struct DiagnosisFinding {
  enum class Kind { node_inside, node_network, link } kind = Kind::node_network;
  std::vector<int> nodes;  // one node, or a link's two ends
  std::string evidence;    // the rounds and ratios that name it
};

// "n3+n4": the names of `group`'s nodes (indices into `nodes`), joined.
std::string node_group_name(const std::vector<std::string>& nodes, const std::vector<int>& group);

class SplitDiagnosis {
 public:
  // `nodes`: host names in order of first appearance; `ranks_per_node` the
  // same on every node; `outlier_pct` the --outlier threshold.
  SplitDiagnosis(std::vector<std::string> nodes, int ranks_per_node, double outlier_pct);

  // Why there is nothing to split (one node), else empty.
  std::string nothing_to_split() const;

  // The next round to measure, or nullopt when the diagnosis is done.
  std::optional<DiagnosisRound> next_round();
  // The busbw of each group of the round next_round() returned, in its order.
  void record(const std::vector<GroupBusbw>& measured);

  const std::vector<RoundReport>& rounds() const { return reports_; }
  // Only findings that reproduced, once the diagnosis is done.
  const std::vector<DiagnosisFinding>& findings() const { return findings_; }
  // Suspects whose finding did not reproduce when run again alone.
  const std::vector<std::string>& not_reproduced() const { return not_reproduced_; }

  std::string group_name(const std::vector<int>& nodes) const { return node_group_name(nodes_, nodes); }

 private:
  struct Candidate {
    DiagnosisFinding finding;
    std::vector<int> group;  // the slow group to run again alone
    DiagnosisStage reference = DiagnosisStage::pairs;  // the kind of healthy group it is compared with
    double ratio = 1;                                  // as first seen
    // confirm: named only if slow again; inside_check: a node named over the
    // network, its own ranks alone (slow: the node itself).
    enum class Purpose { confirm, inside_check } purpose = Purpose::confirm;
  };

  void plan_new_pairs();
  void gather_node_candidates();
  void gather_link_candidates();
  void gather_inside_checks();
  void withdraw_inside_findings_healthy_across();
  std::optional<std::vector<int>> control_group(DiagnosisStage kind) const;
  std::string round_of(DiagnosisStage stage, const std::vector<int>& group) const;
  std::string said(DiagnosisStage stage, const GroupVerdict& v, const std::string& against) const;
  std::optional<GroupVerdict> new_pairing(int node) const;
  std::vector<std::vector<int>> slow_pairs() const;
  std::vector<GroupVerdict> judge(const DiagnosisRound& round, const std::vector<GroupBusbw>& measured);
  void judge_confirmation(const GroupVerdict& verdict);
  std::optional<GroupVerdict> verdict_of(DiagnosisStage stage, const std::vector<int>& group) const;
  bool slow_inside(int node) const;

  std::vector<std::string> nodes_;
  int ranks_per_node_;
  double threshold_;  // a ratio below this is slow
  std::vector<DiagnosisRound> pending_;
  std::optional<DiagnosisRound> in_flight_;
  std::vector<RoundReport> reports_;
  GroupBusbw inside_reference_, pair_reference_;
  std::vector<Candidate> candidates_;
  std::size_t next_confirmation_ = 0;
  bool node_candidates_gathered_ = false;
  bool link_candidates_gathered_ = false;
  bool inside_checks_gathered_ = false;
  std::map<DiagnosisStage, GroupBusbw> alone_reference_;  // a healthy group of each kind, measured alone
  DiagnosisStage control_for_ = DiagnosisStage::pairs;     // the kind the control in flight measures
  std::map<int, std::string> cleared_alone_;  // a node's pairing that read healthy alone
  std::set<std::size_t> cleared_candidates_;  // candidates_ run again alone that read healthy
  std::vector<DiagnosisFinding> findings_;
  std::vector<std::string> not_reproduced_;
};

std::string diagnosis_stage_name(DiagnosisStage stage);


}  // namespace redline
