// Ranks head layouts by a throughput score (predicted efficiency in
// `attention_bench plan`, measured block TFLOPS in `sweep`) and says, for
// each layout behind the best, how much slower it is and why: the model
// factors it loses more on than the best layout does, or has and the best
// has not.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "harness/attention/attention_model.hpp"

namespace redline {

struct RankCandidate {
  std::string label;  // "a_q=32 a_kv=8 d=128"
  double score = 0;   // higher is faster; 0: cannot run
  std::vector<ModelFactor> factors;
};

struct RankedLayout {
  std::size_t index = 0;  // into the candidates
  int rank = 0;           // 1 = best; equal scores share a rank
  double score = 0;
  double slower = 0;      // best score / score - 1: 0.25 = takes 25% longer; infinite when it cannot run
  std::vector<std::string> reasons;  // empty for the best
};

// A factor counts as a reason when it is at least this much (relatively)
// below the best layout's factor of the same name.
inline constexpr double kReasonMargin = 0.02;

// Best first. Throws std::invalid_argument for an empty list or a negative
// score.
std::vector<RankedLayout> rank_layouts(const std::vector<RankCandidate>& candidates);

// "25.0% slower: exponentials ...; sm_fill ..." or "best".
std::string ranking_verdict(const RankedLayout& ranked);

}  // namespace redline
