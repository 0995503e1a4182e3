// The reference's optimizer step: AdamW with bias correction, decoupled
// weight decay on the 2-D tensors only.
#include <cmath>
#include <stdexcept>
#include <string>

#include "harness/train/train_reference.hpp"

namespace redline {

AdamWState adamw_init(const ModelConfig& config) { return {zero_weights(config), zero_weights(config), 0}; }

void adamw_tensor_step(const AdamWConfig& a, std::int64_t t, bool decay, std::vector<double>& w,
                       const std::vector<double>& g, std::vector<double>& m, std::vector<double>& v) {
  if (t < 1) throw std::invalid_argument("adamw step t = " + std::to_string(t) + " is below 1");
  if (g.size() != w.size() || m.size() != w.size() || v.size() != w.size())
    throw std::invalid_argument("adamw: weights, grads, m and v differ in size");
  const double correction1 = 1 - std::pow(a.beta1, static_cast<double>(t));
  const double correction2 = 1 - std::pow(a.beta2, static_cast<double>(t));
  const double decay_rate = decay ? a.weight_decay : 0.0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    m[i] = a.beta1 * m[i] + (1 - a.beta1) * g[i];
    v[i] = a.beta2 * v[i] + (1 - a.beta2) * g[i] * g[i];
    const double m_hat = m[i] / correction1, v_hat = v[i] / correction2;
    w[i] -= a.lr * (m_hat / (std::sqrt(v_hat) + a.eps) + decay_rate * w[i]);
  }
}

void adamw_reference_step(const AdamWConfig& a, ModelWeights& weights, const ModelWeights& grads, AdamWState& state) {
  auto w = weights.tensors();
  const auto g = grads.tensors();
  auto m = state.m.tensors(), v = state.v.tensors();
  if (g.size() != w.size() || m.size() != w.size() || v.size() != w.size())
    throw std::invalid_argument("adamw: weights, grads and state hold different layer counts");
  ++state.step;
  for (std::size_t i = 0; i < w.size(); ++i)
    adamw_tensor_step(a, state.step, !w[i].is_norm(), *w[i].values, *g[i].values, *m[i].values, *v[i].values);
}

}  // namespace redline
