// Ranks head layouts by time (the predicted block time in a plan, the
// measured block time in a sweep) and says, for each layout behind
// the best, how much longer it takes and why: the model factors it loses more
// on than the best layout does, or has and the best has not. Time, not
// TFLOPS: under GQA the layouts of one hidden size differ in FLOPs (the K and
// V projections scale with d), so the most efficient layout need not be the
// fastest.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "harness/attention/attention_model.hpp"

namespace redline {

struct RankCandidate {
  std::string label;  // "a_q=32 a_kv=8 d=128"
  double time = 0;    // the block's time, any unit; 0 (or not finite): cannot run
  std::vector<ModelFactor> factors;
};

struct RankedLayout {
  std::size_t index = 0;  // into the candidates
  int rank = 0;           // 1 = best; equal scores share a rank; 0: cannot run
  double time = 0;
  double slower = 0;      // time / the best's time - 1: 0.25 = takes 25% longer; infinite when it cannot run
  std::vector<std::string> reasons;  // empty for the best
};

// A factor counts as a reason when it is at least this much (relatively)
// below the best layout's factor of the same name.
inline constexpr double kReasonMargin = 0.02;

// Fastest first, layouts that cannot run last (rank 0, whether or not any
// other runs). Throws std::invalid_argument
// for an empty list or a negative time.
std::vector<RankedLayout> rank_layouts(const std::vector<RankCandidate>& candidates);

// "25.0% slower: exponentials ...; sm_fill ..." or "best".
std::string ranking_verdict(const RankedLayout& ranked);

}  // namespace redline
