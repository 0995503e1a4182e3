#include "harness/checkpoint/checkpoint_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace redline {

std::optional<OptimizerKind> parse_optimizer(const std::string& name) {
  if (name == "adam" || name == "adamw") return OptimizerKind::adam;
  if (name == "sgd") return OptimizerKind::sgd;
  if (name == "none") return OptimizerKind::none;
  return std::nullopt;
}

std::string to_string(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::adam: return "adam";
    case OptimizerKind::sgd: return "sgd";
    case OptimizerKind::none: return "none";
  }
  return "?";
}

std::uint64_t checkpoint_bytes_per_param(OptimizerKind kind) {
  constexpr std::uint64_t bf16_weights = 2, fp32_master = 4;
  switch (kind) {
    case OptimizerKind::adam: return bf16_weights + fp32_master + 4 + 4;  // m, v
    case OptimizerKind::sgd: return bf16_weights + fp32_master + 4;       // momentum
    case OptimizerKind::none: return bf16_weights + fp32_master;
  }
  return 0;
}

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets = {
      {"125m", 125'000'000},       {"350m", 350'000'000},       {"1.3b", 1'300'000'000},
      {"7b", 7'000'000'000},       {"8b", 8'000'000'000},       {"13b", 13'000'000'000},
      {"30b", 30'000'000'000},     {"34b", 34'000'000'000},     {"65b", 65'000'000'000},
      {"70b", 70'000'000'000},     {"175b", 175'000'000'000},   {"405b", 405'000'000'000}};
  return presets;
}

std::optional<std::uint64_t> preset_parameters(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& p : model_presets())
    if (p.name == lower) return p.parameters;
  return std::nullopt;
}

std::uint64_t checkpoint_state_bytes(std::uint64_t parameters, OptimizerKind kind) {
  const std::uint64_t per = checkpoint_bytes_per_param(kind);
  if (parameters > kMaxCheckpointStateBytes / per)
    throw std::overflow_error(std::to_string(parameters) + " parameters x " + std::to_string(per) +
                              " B is a state above " + kMaxCheckpointStateText);
  return parameters * per;
}

}  // namespace redline
