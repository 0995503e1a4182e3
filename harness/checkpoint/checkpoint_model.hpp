// What a training checkpoint holds: the state-size model. Pure arithmetic:
// no I/O.
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

// The largest checkpoint state, from --size or a parameter count: 1 EiB, some 10^5 times a 405B
// model's Adam state, so that 2 x a state (its host copy) never wraps a 64-bit byte count.
inline constexpr std::uint64_t kMaxCheckpointStateBytes = std::uint64_t{1} << 60;
inline constexpr const char* kMaxCheckpointStateText = "2^60 bytes (1 EiB)";

// parameters x bytes per parameter; throws std::overflow_error past kMaxCheckpointStateBytes.
std::uint64_t checkpoint_state_bytes(std::uint64_t parameters, OptimizerKind kind);

// How often to checkpoint (Young/Daly) is measure's: harness/measure/young_daly.hpp.

}  // namespace redline
