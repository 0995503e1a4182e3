#include "harness/train/step_flops.hpp"

#include <stdexcept>

namespace redline {

StepFlops step_flops(const ModelConfig& config, std::int64_t mbs, std::int64_t seq, Recompute mode) {
  if (mbs < 1 || seq < 1) throw std::invalid_argument("mbs and seq must be at least 1");
  const ParameterCounts p = parameter_counts(config);
  const double tokens = static_cast<double>(mbs) * static_cast<double>(seq);
  const double s = static_cast<double>(seq);
  // One layer's attention forward: QK^T and PV over the unmasked scores.
  const double attention_forward = 4.0 * static_cast<double>(mbs) * static_cast<double>(config.heads) *
                                   static_cast<double>(config.head_dim()) * s * (s + 1) / 2;
  const double layers = static_cast<double>(config.layers);
  StepFlops f;
  f.attention = 3 * attention_forward * layers;
  f.model = 6 * static_cast<double>(p.matmul()) * tokens + f.attention;
  f.hardware = f.model + 0.5 * attention_forward * layers;
  if (mode == Recompute::full)
    f.hardware += (2 * static_cast<double>(p.layer_attention + p.layer_mlp) * tokens + attention_forward) * layers;
  return f;
}

}  // namespace redline
