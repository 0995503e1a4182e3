// Which host every rank runs on, and the --split groups the hosts form.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "collectives/bootstrap/bootstrap.hpp"

namespace redline {

// automatic: --split auto, rounds of groups that end with a name (split_diagnosis.hpp).
enum class SplitMode { none, node, pairs, automatic };

// Host names, one per rank (REDLINE_HOSTNAME overrides gethostname, for
// containers whose host names are not unique). Collective.
std::vector<std::string> gather_host_names(Bootstrap& bootstrap);

// "node1: ranks 0-3; node2: ranks 4-7".
std::string describe_hosts(const std::vector<std::string>& hosts);

// Each rank's --split group: hosts numbered in order of first appearance
// (node: one group per host; pairs: two hosts per group; none: one group).
std::vector<int> split_colors(const std::vector<std::string>& hosts, SplitMode mode);

// Each group's hosts, "a+b", by group.
std::map<int, std::string> group_host_names(const std::vector<int>& colors, const std::vector<std::string>& hosts);

// Every rank computes the same groups from the same host list, so every rank
// reaches the same verdict here: a UsageError (--split) unless the groups are
// of equal size with at least two ranks each. Unequal groups would disagree
// on counts, roots and skipped sizes and leave ranks waiting in different
// gathers; a one-rank group measures no link.
void check_split_groups(const std::vector<int>& colors, const std::vector<std::string>& hosts, SplitMode mode);

}  // namespace redline
