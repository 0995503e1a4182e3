#include "harness/attention/layout_ranking.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "harness/core/units.hpp"

namespace redline {
namespace {

const ModelFactor* find_factor(const std::vector<ModelFactor>& factors, const std::string& name) {
  for (const auto& f : factors)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<std::string> reasons_against(const RankCandidate& layout, const RankCandidate& best) {
  std::vector<std::string> reasons;
  for (const auto& f : layout.factors) {
    const ModelFactor* theirs = find_factor(best.factors, f.name);
    if (!theirs) {
      reasons.push_back(f.name + ": " + f.why);
    } else if (f.value < theirs->value * (1 - kReasonMargin)) {
      reasons.push_back(f.name + " " + format_percent(f.value) + " against " + format_percent(theirs->value) + ": " + f.why);
    }
  }
  return reasons;
}

// Where no layout runs there is no best to compare with: the factors at 0.
std::vector<std::string> what_stops(const RankCandidate& layout) {
  std::vector<std::string> reasons;
  for (const auto& f : layout.factors)
    if (f.value == 0) reasons.push_back(f.name + ": " + f.why);
  return reasons;
}

}  // namespace

std::vector<RankedLayout> rank_layouts(const std::vector<RankCandidate>& candidates) {
  if (candidates.empty()) throw std::invalid_argument("rank_layouts needs at least one layout");
  for (const auto& c : candidates)
    if (!(c.time >= 0)) throw std::invalid_argument("rank_layouts: " + c.label + " has a negative time");
  const auto runs = [&](std::size_t i) { return candidates[i].time > 0 && std::isfinite(candidates[i].time); };
  std::vector<std::size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (runs(a) != runs(b)) return runs(a);
    return runs(a) && candidates[a].time < candidates[b].time;
  });
  const RankCandidate& best = candidates[order.front()];
  std::vector<RankedLayout> ranked;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const RankCandidate& c = candidates[order[i]];
    RankedLayout r;
    r.index = order[i];
    r.time = runs(order[i]) ? c.time : 0;
    // A layout that cannot run has no place, even where none can: never "best".
    if (!runs(order[i])) r.rank = 0;
    else r.rank = i > 0 && r.time == ranked.back().time ? ranked.back().rank : static_cast<int>(i) + 1;
    r.slower = runs(order[i]) && runs(order.front()) ? c.time / best.time - 1 : std::numeric_limits<double>::infinity();
    if (r.rank != 1) r.reasons = runs(order.front()) ? reasons_against(c, best) : what_stops(c);
    ranked.push_back(std::move(r));
  }
  return ranked;
}

std::string ranking_verdict(const RankedLayout& ranked) {
  if (ranked.rank == 1) return "best";
  std::string verdict = ranked.rank > 0 ? format_percent(ranked.slower) + " slower" : "cannot run";
  for (std::size_t i = 0; i < ranked.reasons.size(); ++i) verdict += (i == 0 ? ": " : "; ") + ranked.reasons[i];
  if (ranked.reasons.empty() && ranked.time > 0) verdict += " (no single factor stands out)";
  return verdict;
}

}  // namespace redline
