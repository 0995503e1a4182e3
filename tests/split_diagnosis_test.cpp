// --split auto's reasoning (split_diagnosis) on clusters described by a
// bandwidth per group: which rounds it asks for, and what it names. No ranks:
// the emulated cluster runs it for real (tests/cluster_test.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "collectives/diagnosis/split_diagnosis.hpp"
#include "tests/support.hpp"

namespace redline {
namespace {

using Cluster = std::function<double(DiagnosisStage stage, const std::vector<int>& nodes)>;

std::vector<std::string> node_names(int n) {
  std::vector<std::string> names;
  for (int i = 1; i <= n; ++i) names.push_back("n" + std::to_string(i));
  return names;
}

// Runs every round the diagnosis asks for on `cluster`, three sizes each at
// the group's bandwidth (the last two sizes as given, the first at half:
// small sizes read lower on every group alike).
SplitDiagnosis diagnose(int nodes, int ranks_per_node, const Cluster& cluster, double outlier_pct = 10) {
  SplitDiagnosis d(node_names(nodes), ranks_per_node, outlier_pct);
  for (int guard = 0; guard < 100; ++guard) {
    const auto round = d.next_round();
    if (!round) return d;
    std::vector<GroupBusbw> measured;
    for (const auto& group : round->groups) {
      const double busbw = cluster(round->stage, group);
      measured.push_back({busbw / 2, busbw, busbw});
    }
    d.record(measured);
  }
  ADD_FAILURE() << "the diagnosis never ended";
  return d;
}

bool holds(const std::vector<int>& group, int node) { return std::find(group.begin(), group.end(), node) != group.end(); }

// A healthy cluster: inside a node 5 GB/s, across nodes 10.
double healthy(DiagnosisStage, const std::vector<int>& nodes) { return nodes.size() == 1 ? 5 : 10; }

std::vector<DiagnosisStage> stages(const SplitDiagnosis& d) {
  std::vector<DiagnosisStage> s;
  for (const RoundReport& r : d.rounds()) s.push_back(r.round.stage);
  return s;
}

TEST(SplitDiagnosis, OneNodeHasNothingToSplit) {
  SplitDiagnosis d(node_names(1), 8, 10);
  EXPECT_CONTAINS(d.nothing_to_split(), "one node (n1): nothing to split");
  EXPECT_FALSE(d.next_round());
}

TEST(SplitDiagnosis, AHealthyClusterTakesTwoRoundsAndNamesNothing) {
  const SplitDiagnosis d = diagnose(4, 2, healthy);
  EXPECT_EQ(stages(d), (std::vector{DiagnosisStage::inside_nodes, DiagnosisStage::pairs}));
  EXPECT_EQ(d.rounds()[0].round.groups, (std::vector<std::vector<int>>{{0}, {1}, {2}, {3}}));
  EXPECT_EQ(d.rounds()[1].round.groups, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_TRUE(d.findings().empty());
  EXPECT_TRUE(d.not_reproduced().empty());
  EXPECT_NEAR(d.rounds()[1].groups[0].ratio, 1, 1e-12);
}

TEST(SplitDiagnosis, OneRankPerNodeSkipsTheInsideRound) {
  const SplitDiagnosis d = diagnose(4, 1, healthy);
  EXPECT_EQ(stages(d), (std::vector{DiagnosisStage::pairs}));
}

// n3's NIC: every group that crosses it is slow; its own ranks are not.
TEST(SplitDiagnosis, ASlowNicNamesItsNodeOverTheNetwork) {
  const auto slow_nic = [](DiagnosisStage stage, const std::vector<int>& nodes) {
    return nodes.size() == 2 && holds(nodes, 2) ? 0.1 : healthy(stage, nodes);
  };
  const SplitDiagnosis d = diagnose(4, 2, slow_nic);
  ASSERT_EQ(d.findings().size(), 1u);
  const DiagnosisFinding& f = d.findings().front();
  EXPECT_EQ(f.kind, DiagnosisFinding::Kind::node_network);
  EXPECT_EQ(f.nodes, std::vector<int>{2});
  // The evidence: its pair, its new pairing, that pairing again alone, and its own ranks alone.
  EXPECT_CONTAINS(f.evidence, "n3+n4 at 1.00% of the healthy pairs' (round 2)");
  EXPECT_CONTAINS(f.evidence, "n3+n1 at 1.00% of the healthy pairs' (round 3)");
  EXPECT_CONTAINS(f.evidence, "n3+n1 alone at 1.00% of a healthy pair's alone");
  EXPECT_CONTAINS(f.evidence, "its own ranks: n3 alone at 100% of a healthy node's alone");
  EXPECT_EQ(d.rounds()[2].round.groups, (std::vector<std::vector<int>>{{2, 0}, {3, 1}}));
  EXPECT_EQ(d.rounds()[3].round.stage, DiagnosisStage::control);
  EXPECT_EQ(d.rounds()[3].round.groups, (std::vector<std::vector<int>>{{0, 1}}));
}

// A slow cable between n3 and n4 only: each is healthy with another node.
TEST(SplitDiagnosis, ASlowLinkNamesBothEndsAsALink) {
  const auto slow_link = [](DiagnosisStage stage, const std::vector<int>& nodes) {
    return nodes == std::vector<int>{2, 3} ? 0.1 : healthy(stage, nodes);
  };
  const SplitDiagnosis d = diagnose(4, 2, slow_link);
  ASSERT_EQ(d.findings().size(), 1u);
  EXPECT_EQ(d.findings().front().kind, DiagnosisFinding::Kind::link);
  EXPECT_EQ(d.findings().front().nodes, (std::vector<int>{2, 3}));
  EXPECT_CONTAINS(d.findings().front().evidence, "neither end is slow with another node");
  EXPECT_CONTAINS(d.findings().front().evidence, "n3+n4 alone at 1.00%");
}

// A slow link whose ends also read slow on their own ranks (a loaded machine):
// healthy with other nodes, they are not named for it, and the link is.
TEST(SplitDiagnosis, EndsHealthyWithOthersAreNotNamedInside) {
  const auto slow_link_noisy_ends = [](DiagnosisStage stage, const std::vector<int>& nodes) {
    if (nodes == std::vector<int>{2, 3}) return 0.1;
    if (nodes.size() == 1 && (nodes[0] == 2 || nodes[0] == 3)) return 0.3 * healthy(stage, nodes);
    return healthy(stage, nodes);
  };
  const SplitDiagnosis d = diagnose(4, 2, slow_link_noisy_ends);
  ASSERT_EQ(d.findings().size(), 1u);
  EXPECT_EQ(d.findings().front().kind, DiagnosisFinding::Kind::link);
  EXPECT_EQ(d.findings().front().nodes, (std::vector<int>{2, 3}));
  ASSERT_EQ(d.not_reproduced().size(), 2u);
  EXPECT_CONTAINS(d.not_reproduced().front(), "n3: its own ranks read slow (");
  EXPECT_CONTAINS(d.not_reproduced().front(), "but it is healthy with another node (n3+n1 at 100%");
}

// n3 short of CPU: slow with its own ranks and with anyone: named once, as the node.
TEST(SplitDiagnosis, ASlowNodeIsNamedInsideNotAsItsLinks) {
  const auto straggler = [](DiagnosisStage stage, const std::vector<int>& nodes) {
    return holds(nodes, 2) ? 0.2 * healthy(stage, nodes) : healthy(stage, nodes);
  };
  const SplitDiagnosis d = diagnose(4, 2, straggler);
  ASSERT_EQ(d.findings().size(), 1u);
  const DiagnosisFinding& f = d.findings().front();
  EXPECT_EQ(f.kind, DiagnosisFinding::Kind::node_inside);
  EXPECT_EQ(f.nodes, std::vector<int>{2});
  EXPECT_CONTAINS(f.evidence, "its own ranks together: n3 at 20.0% of the other nodes' (round 1)");
  EXPECT_CONTAINS(f.evidence, "across nodes too");
}

// Slow once and not again (a noisy neighbour, groups sharing CPUs): a finding
// that does not reproduce is reported, never named.
TEST(SplitDiagnosis, AFindingThatDoesNotReproduceIsNotNamed) {
  const auto noisy_once = [](DiagnosisStage stage, const std::vector<int>& nodes) {
    const bool first_reading = stage == DiagnosisStage::pairs || stage == DiagnosisStage::new_pairs;
    return first_reading && holds(nodes, 0) ? 0.3 * healthy(stage, nodes) : healthy(stage, nodes);
  };
  const SplitDiagnosis d = diagnose(4, 2, noisy_once);
  EXPECT_TRUE(d.findings().empty());
  ASSERT_FALSE(d.not_reproduced().empty());
  EXPECT_CONTAINS(d.not_reproduced().front(), "n1: slow at first (30.0%), not again: n1+n3 alone at 100%");
  // Its link was suspected next, and cleared alone too.
  EXPECT_CONTAINS(d.not_reproduced().back(), "n1+n2: slow at first (30.0%), not again: n1+n2 alone at 100%");
}

// As on the emulated cluster with n3 dropping packets: groups alone read 4x
// what groups at once do, n1 read slow once (its first round only), and a
// pair with n3 reads 1% of a healthy one at once, and alone 70% of a
// healthy pair at once: far below a healthy pair alone. n1, cleared alone, may be the healthy pair n1+n2 that
// n3's pairing alone is set against; against the pairs that ran at once
// n3 would have passed, and n3+n4 been named a link.
TEST(SplitDiagnosis, ASuspicionClearedAloneLeavesItsPairAReferenceAlone) {
  const auto lossy_n3 = [](DiagnosisStage stage, const std::vector<int>& nodes) {
    const bool alone = stage == DiagnosisStage::control || stage == DiagnosisStage::confirm;
    double busbw = healthy(stage, nodes) * (alone ? 4 : 1);
    if (holds(nodes, 2) && nodes.size() == 2) busbw = alone ? 7 : 0.1;
    if (stage == DiagnosisStage::inside_nodes && nodes == std::vector<int>{0}) busbw = 1;
    return busbw;
  };
  const SplitDiagnosis d = diagnose(4, 2, lossy_n3, 50);
  ASSERT_EQ(d.findings().size(), 1u);
  EXPECT_EQ(d.findings()[0].kind, DiagnosisFinding::Kind::node_network);
  EXPECT_EQ(d.findings()[0].nodes, std::vector<int>{2});
  EXPECT_CONTAINS(d.not_reproduced().front(), "n1: slow at first");
}

// Five nodes: n5 sits the pairs out, then gets a pairing of its own.
TEST(SplitDiagnosis, AnOddNodeIsPairedWithAHealthyOne) {
  const auto slow_fifth = [](DiagnosisStage stage, const std::vector<int>& nodes) {
    return nodes.size() == 2 && holds(nodes, 4) ? 0.1 : healthy(stage, nodes);
  };
  const SplitDiagnosis d = diagnose(5, 2, slow_fifth);
  EXPECT_CONTAINS(d.rounds()[1].round.purpose, "n5 waits for a new pair");
  EXPECT_EQ(d.rounds()[2].round.groups, (std::vector<std::vector<int>>{{4, 0}}));
  ASSERT_EQ(d.findings().size(), 1u);
  EXPECT_EQ(d.findings().front().nodes, std::vector<int>{4});
}

// The rounds do not grow with the cluster: one bad node among 64 takes as
// many as among 4.
TEST(SplitDiagnosis, RoundsStayFewOnALargeCluster) {
  const auto slow_nic = [](DiagnosisStage stage, const std::vector<int>& nodes) {
    return nodes.size() == 2 && holds(nodes, 41) ? 0.1 : healthy(stage, nodes);
  };
  const SplitDiagnosis small = diagnose(4, 2, [](DiagnosisStage s, const std::vector<int>& n) {
    return n.size() == 2 && holds(n, 2) ? 0.1 : healthy(s, n);
  });
  const SplitDiagnosis large = diagnose(64, 2, slow_nic);
  ASSERT_EQ(large.findings().size(), 1u);
  EXPECT_EQ(large.findings().front().nodes, std::vector<int>{41});
  EXPECT_EQ(large.rounds().size(), small.rounds().size());
  EXPECT_LE(large.rounds().size(), 7u);
}

// A group is judged at most sizes: one size far below does not make it slow.
TEST(SplitDiagnosis, OneSlowSizeIsNotASlowGroup) {
  SplitDiagnosis d(node_names(4), 1, 10);
  ASSERT_TRUE(d.next_round());
  d.record({{10, 10, 10}, {0.1, 10, 10}});
  EXPECT_FALSE(d.rounds().front().groups[1].slow);
  EXPECT_FALSE(d.next_round());
}

TEST(SplitDiagnosis, ARoundMustBeRecordedBeforeTheNext) {
  SplitDiagnosis d(node_names(4), 2, 10);
  ASSERT_TRUE(d.next_round());
  EXPECT_THROW(d.next_round(), std::logic_error);
  EXPECT_THROW(d.record({{1, 1, 1}}), std::logic_error);  // four groups, not one
}

}  // namespace
}  // namespace redline
