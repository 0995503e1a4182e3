#include "harness/train/step_flops.hpp"

#include <stdexcept>

namespace redline {

StepFlops step_flops(const ModelConfig& config, std::int64_t mbs, std::int64_t seq, Recompute mode,
                     AttentionChoice attention) {
  if (mbs < 1 || seq < 1) throw std::invalid_argument("mbs and seq must be at least 1");
  const ParameterCounts p = parameter_counts(config);
  const double tokens = static_cast<double>(mbs) * static_cast<double>(seq);
  const double s = static_cast<double>(seq);
  const double per_score = 4.0 * static_cast<double>(mbs) * static_cast<double>(config.heads) *
                           static_cast<double>(config.head_dim());
  // One layer's attention forward over the unmasked scores (the convention),
  // and over the scores a path really computes: the unfused GEMMs compute
  // all s^2 and mask afterwards.
  const double attention_forward = per_score * s * (s + 1) / 2;
  const double computed_forward = attention == AttentionChoice::cudnn ? attention_forward : per_score * s * s;
  // The fused backward recomputes S (half a forward); the unfused one reruns
  // the whole forward to get P back.
  const double backward_recompute = attention == AttentionChoice::cudnn ? 0.5 * attention_forward : computed_forward;
  const double layers = static_cast<double>(config.layers);
  const double matmul = 6 * static_cast<double>(p.matmul()) * tokens;
  StepFlops f;
  f.attention = 3 * attention_forward * layers;
  f.model = matmul + f.attention;
  f.hardware = matmul + (3 * computed_forward + backward_recompute) * layers;
  // Full recompute reruns the layer's forward but its last GEMM: the down
  // projection's output is the layer's, which the backward does not need
  // again (kernels/train/train_layer.cu, layer_recompute). So two of the MLP's
  // three h x ffn matrices.
  const double recomputed_matmul = static_cast<double>(p.layer_attention) + static_cast<double>(p.layer_mlp) * 2 / 3;
  if (mode == Recompute::full) f.hardware += (2 * recomputed_matmul * tokens + computed_forward) * layers;
  return f;
}

}  // namespace redline
