// The training-step sweep's verdict on activation checkpointing, from each
// recompute mode's micro-batch sweep: what recompute costs at a batch every
// mode runs, the memory it frees there (predicted, and measured where the
// trials printed it), the largest batch each mode reaches, and which mode and
// batch give the most tokens/s, by how much. Pure C++.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/report/report.hpp"
#include "harness/train/activation_memory.hpp"

namespace redline {

struct ModeSweep {
  Recompute mode = Recompute::none;
  std::map<std::int64_t, double> tokens_per_s;         // ok batches: the median of their trials
  std::map<std::int64_t, double> measured_peak_bytes;  // where the trial printed it
  std::map<std::int64_t, double> predicted_peak_bytes;
  std::optional<std::int64_t> largest_fit;             // the sweep's (bisected) largest batch that ran
  std::optional<std::int64_t> saturation;              // the harness's saturation batch
};

// One mode's figures from its batch sweep's rows (batch_size, status,
// tokens_per_s and the peak bytes, as a training-step trial prints them) and
// the sweep's largest fit; the saturation is the harness's, over the ok rows.
ModeSweep mode_sweep(Recompute mode, const std::vector<Row>& rows, std::optional<std::int64_t> largest_fit);

// Summary lines, in order: "slowdown", "memory freed", "largest batch",
// "best", "verdict". Modes that ran nothing are named as such.
std::vector<std::pair<std::string, std::string>> recompute_verdict(const std::vector<ModeSweep>& modes);

}  // namespace redline
