#include "collectives/bootstrap/rank_hosts.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>

#include "harness/core/usage_error.hpp"

namespace redline {
namespace {

// "0-3,6": ranks in order, runs shortened.
std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(ranks[i]);
    if (j > i) text += '-' + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

}  // namespace

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
  for (const auto& h : order) {
    if (!text.empty()) text += "; ";
    text += h + ": ranks " + rank_list(ranks[h]);
  }
  return text;
}

std::vector<int> split_colors(const std::vector<std::string>& hosts, SplitMode mode) {
  std::map<std::string, int> index;
  std::vector<int> colors;
  for (const auto& h : hosts) {
    const auto it = index.emplace(h, static_cast<int>(index.size())).first;
    colors.push_back(mode == SplitMode::pairs ? it->second / 2 : mode == SplitMode::node ? it->second : 0);
  }
  return colors;
}

std::map<int, std::string> group_host_names(const std::vector<int>& colors, const std::vector<std::string>& hosts) {
  std::map<int, std::string> names;
  // Each host once per group, matched whole: node1 is not already in "node10".
  std::set<std::pair<int, std::string>> named;
  for (std::size_t r = 0; r < colors.size(); ++r) {
    if (!named.emplace(colors[r], hosts[r]).second) continue;
    std::string& name = names[colors[r]];
    if (!name.empty()) name += '+';
    name += hosts[r];
  }
  return names;
}

void check_split_groups(const std::vector<int>& colors, const std::vector<std::string>& hosts, SplitMode mode) {
  std::map<int, int> sizes;
  for (const int color : colors) ++sizes[color];
  bool usable = true;
  for (const auto& [color, n] : sizes) usable = usable && n == sizes.begin()->second && n >= 2;
  if (usable) return;
  const auto names = group_host_names(colors, hosts);
  std::string layout;
  for (const auto& [color, n] : sizes)
    layout += (layout.empty() ? "" : ", ") + names.at(color) + ": " + std::to_string(n);
  throw UsageError("--split", mode == SplitMode::node ? "node" : "pairs",
                   "needs groups of equal size with at least 2 ranks each; the ranks per group are " + layout);
}

}  // namespace redline
