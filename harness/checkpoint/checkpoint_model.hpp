// What a training checkpoint holds (the state-size model) and how often to
// take one (Young/Daly), from measured costs. Pure arithmetic: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redline {

// Bytes per parameter that a checkpoint must persist, for mixed-precision
// training (bf16 compute weights, fp32 master weights):
//   bf16 weights      2 B
//   fp32 master       4 B
//   Adam m and v      4 + 4 B   (adam; sgd with momentum: 4 B; none: 0)
// adam: 14 B/param, sgd: 10 B/param, none: 6 B/param. bf16 gradients and
// activations are recomputed after a restart, so they are not checkpointed.
enum class OptimizerKind { adam, sgd, none };

std::optional<OptimizerKind> parse_optimizer(const std::string& name);
std::string to_string(OptimizerKind kind);
std::uint64_t checkpoint_bytes_per_param(OptimizerKind kind);

struct ModelPreset {
  std::string name;          // "7b"
  std::uint64_t parameters;  // 7e9
};
// 125m, 350m, 1.3b, 7b, 8b, 13b, 30b, 34b, 65b, 70b, 175b, 405b.
const std::vector<ModelPreset>& model_presets();
std::optional<std::uint64_t> preset_parameters(const std::string& name);

// parameters x bytes per parameter; throws std::overflow_error past 2^63.
std::uint64_t checkpoint_state_bytes(std::uint64_t parameters, OptimizerKind kind);

// Young (1974) / Daly (2006) first-order model, all times in seconds:
//   interval  tau  = sqrt(2 C M)           C: checkpoint cost (the stall),
//                                          M: mean time between failures
//   lost per failure L = tau / 2 + R       (half an interval redone, plus
//                                          restore time R)
//   overhead       = C / tau + L / M       (stall share + share lost to
//                                          failures; R/M is constant, so
//                                          tau stays Young/Daly's optimum)
// The async save stalls only for its snapshot (C = snapshot time), but a new
// checkpoint cannot start before the previous one is durable, so
//   tau_async = max(sqrt(2 C_snap M), persist time P)
// and a failure during persist falls back one more checkpoint:
//   lost per failure L = tau / 2 + P + R, overhead = C_snap / tau + L / M.
struct CheckpointAdvice {
  double interval_s = 0;
  double overhead_pct = 0;
  double lost_work_s = 0;
};
CheckpointAdvice young_daly_advice(double cost_s, double mtbf_s, double restore_s);
CheckpointAdvice young_daly_async_advice(double snapshot_s, double persist_s, double mtbf_s, double restore_s);

}  // namespace redline
