// The CPU reference of a training step (harness/train/train_reference): each
// layer by hand, every weight's gradient against central finite differences
// on tiny MHA and GQA stacks, AdamW by hand, and the loss falling as it trains.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "harness/core/splitmix64.hpp"
#include "harness/train/train_reference.hpp"
#include "harness/train/train_reference_layers.hpp"
#include "support.hpp"

using namespace redline;
using namespace redline::train_ref;

namespace {

ModelConfig tiny(std::int64_t kv_heads) {
  ModelConfig c;
  c.name = "tiny";
  c.hidden = 16, c.heads = 4, c.kv_heads = kv_heads, c.ffn = 24, c.layers = 2, c.vocab = 11;
  return c;
}

std::vector<double> random_values(std::size_t n, std::uint64_t seed) {
  std::vector<double> t(n);
  std::uint64_t i = seed << 32;
  for (auto& x : t) x = static_cast<double>(splitmix64(i++) >> 11) * 0x1p-53 * 2 - 1;
  return t;
}

std::vector<std::int32_t> random_tokens(std::size_t n, std::int64_t vocab, std::uint64_t seed) {
  std::vector<std::int32_t> t(n);
  std::uint64_t i = seed << 32;
  for (auto& x : t) x = static_cast<std::int32_t>(splitmix64(i++) % static_cast<std::uint64_t>(vocab));
  return t;
}

double norm(const std::vector<double>& x) {
  double sum = 0;
  for (double v : x) sum += v * v;
  return std::sqrt(sum);
}

double relative_difference(const std::vector<double>& x, const std::vector<double>& ref) {
  double diff = 0;
  for (std::size_t i = 0; i < x.size(); ++i) diff += (x[i] - ref[i]) * (x[i] - ref[i]);
  return std::sqrt(diff) / norm(ref);
}

// Up to `count` indices of 0..n-1, spread evenly, first and last included.
std::vector<std::size_t> sample_indices(std::size_t n, std::size_t count) {
  std::vector<std::size_t> out;
  if (n <= count) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (std::size_t j = 0; j < count; ++j) out.push_back(j * (n - 1) / (count - 1));
  return out;
}

// Random norm weights too, so their gradients are tested away from 1.
ModelWeights test_weights(const ModelConfig& c) {
  ModelWeights w = init_weights(c, 7);
  std::uint64_t seed = 100;
  for (WeightTensor& t : w.tensors())
    if (t.is_norm()) {
      const auto r = random_values(t.values->size(), seed++);
      for (std::size_t i = 0; i < r.size(); ++i) (*t.values)[i] = 1 + 0.5 * r[i];
    }
  return w;
}

// Every tensor's backward gradient against central differences (eps 1e-6)
// of the loss, on up to 80 elements per tensor.
void expect_gradients_match_finite_differences(const ModelConfig& c) {
  const std::int64_t batch = 2, seq = 5;
  ModelWeights w = test_weights(c);
  const auto tokens = random_tokens(batch * seq, c.vocab, 1), targets = random_tokens(batch * seq, c.vocab, 2);
  const StepResult r = reference_step(c, w, tokens, targets, batch, seq);
  EXPECT_NEAR(r.loss, reference_loss(c, w, tokens, targets, batch, seq), 1e-14);
  const auto grads = r.grads.tensors();
  auto weights = w.tensors();
  ASSERT_EQ(grads.size(), weights.size());
  const double eps = 1e-6;
  for (std::size_t k = 0; k < weights.size(); ++k) {
    std::vector<double>& values = *weights[k].values;
    std::vector<double> numeric, analytic;
    for (std::size_t i : sample_indices(values.size(), 80)) {
      const double saved = values[i];
      values[i] = saved + eps;
      const double up = reference_loss(c, w, tokens, targets, batch, seq);
      values[i] = saved - eps;
      const double down = reference_loss(c, w, tokens, targets, batch, seq);
      values[i] = saved;
      numeric.push_back((up - down) / (2 * eps));
      analytic.push_back((*grads[k].values)[i]);
    }
    ASSERT_GT(norm(numeric), 1e-8) << weights[k].name << ": a zero gradient checks nothing";
    EXPECT_LT(relative_difference(analytic, numeric), 1e-6) << c.kv_heads << " KV heads, " << weights[k].name;
  }
}

}  // namespace

// ---- the layers by hand ----

TEST(TrainReferenceLayers, LinearIsXTimesWTransposedWithWAsOutByIn) {
  // x [1, 2]; W [3, 2]: rows (1, 0), (0, 1), (1, 1).
  const std::vector<double> x = {1, 2}, w = {1, 0, 0, 1, 1, 1};
  EXPECT_EQ(linear_forward(x, w, 1, 2, 3), (std::vector<double>{1, 2, 3}));
  std::vector<double> dw(6, 0.0);
  const auto dx = linear_backward(x, w, {1, 10, 100}, 1, 2, 3, dw);
  EXPECT_EQ(dx, (std::vector<double>{101, 110}));
  EXPECT_EQ(dw, (std::vector<double>{1, 2, 10, 20, 100, 200}));
  EXPECT_THROW(linear_forward(x, w, 1, 3, 2), std::invalid_argument);
}

TEST(TrainReferenceLayers, RmsNormOfAKnownVector) {
  // mean(x^2) = 4, eps 0: x / 2 * w.
  const auto f = rmsnorm_forward({2, -2, 2, -2}, {1, 2, 3, 4}, 1, 4, 0.0);
  EXPECT_EQ(f.y, (std::vector<double>{1, -2, 3, -4}));
  EXPECT_DOUBLE_EQ(f.inv_rms[0], 0.5);
  // mean((3, 4)^2) = 12.5; eps 0.5 brings it to 13. Rows are separate.
  const auto g = rmsnorm_forward({3, 4, 1, 1}, {1, 1}, 2, 2, 0.5);
  EXPECT_NEAR(g.y[0], 3 / std::sqrt(13.0), 1e-15);
  EXPECT_NEAR(g.y[1], 4 / std::sqrt(13.0), 1e-15);
  EXPECT_NEAR(g.y[2], 1 / std::sqrt(1.5), 1e-15);
}

TEST(TrainReferenceLayers, RotaryAtPositionZeroIsIdentityAndPreservesNorm) {
  const RopeDims dims{3, 2, 8, 10000};          // seq 3, 2 heads of 8
  const auto x = random_values(2 * 3 * 16, 3);  // batch 2: rows at positions 0, 1, 2, 0, 1, 2
  const auto y = rope_forward(x, 6, dims);
  for (std::int64_t t = 0; t < 6; ++t) {
    const std::vector<double> in(x.begin() + t * 16, x.begin() + (t + 1) * 16);
    const std::vector<double> out(y.begin() + t * 16, y.begin() + (t + 1) * 16);
    if (t % 3 == 0)
      EXPECT_EQ(out, in) << "row " << t;
    else
      EXPECT_NE(out, in) << "row " << t;
    for (int h = 0; h < 2; ++h) {
      const std::vector<double> head_in(in.begin() + h * 8, in.begin() + (h + 1) * 8);
      const std::vector<double> head_out(out.begin() + h * 8, out.begin() + (h + 1) * 8);
      EXPECT_NEAR(norm(head_out), norm(head_in), 1e-14) << "row " << t << " head " << h;
    }
  }
  // The backward turns back.
  const auto back = rope_backward(y, 6, dims);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(back[i], x[i], 1e-14);
}

TEST(TrainReferenceLayers, RotaryPairsIWithIPlusHalfAtHuggingFaceFrequencies) {
  // d = 4, position 2: pair (0, 2) turns by 2 rad, pair (1, 3) by 2 / sqrt(theta).
  const RopeDims dims{3, 1, 4, 100};
  std::vector<double> x(12, 0.0);
  x[8] = 1, x[9] = 1;  // row 2 (position 2): e_0 + e_1
  const auto y = rope_forward(x, 3, dims);
  EXPECT_NEAR(y[8], std::cos(2.0), 1e-15);
  EXPECT_NEAR(y[10], std::sin(2.0), 1e-15);
  EXPECT_NEAR(y[9], std::cos(0.2), 1e-15);
  EXPECT_NEAR(y[11], std::sin(0.2), 1e-15);
  EXPECT_THROW(rope_forward(std::vector<double>(6), 2, RopeDims{2, 1, 3, 100}), std::invalid_argument);
}

TEST(TrainReferenceLayers, AttentionIsCausal) {
  const AttentionDims a{1, 4, 2, 1, 4};
  auto q = random_values(4 * 8, 1), k = random_values(4 * 4, 2), v = random_values(4 * 4, 3);
  const auto before = attention_forward(a, q, k, v);
  // The first token reads only itself: its output is V's first row, per head.
  for (int h = 0; h < 2; ++h)
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(before[h * 4 + c], v[c], 1e-15);
  // Change every later token's q, k and v: the first token's output stays.
  for (std::size_t i = 8; i < q.size(); ++i) q[i] += 1;
  for (std::size_t i = 4; i < k.size(); ++i) k[i] -= 1, v[i] += 2;
  const auto after = attention_forward(a, q, k, v);
  EXPECT_EQ(std::vector<double>(after.begin(), after.begin() + 8),
            std::vector<double>(before.begin(), before.begin() + 8));
  EXPECT_NE(std::vector<double>(after.begin() + 8, after.end()), std::vector<double>(before.begin() + 8, before.end()));
}

TEST(TrainReferenceLayers, AttentionScalesScoresByOneOverSqrtHeadDim) {
  // d = 4, scale 1/2: the second query scores 0 on key 0 and 2 * 1 / 2 = 1 on key 1.
  const AttentionDims a{1, 2, 1, 1, 4};
  const std::vector<double> q = {0, 0, 0, 0, 2, 0, 0, 0}, k = {0, 0, 0, 0, 1, 0, 0, 0};
  const std::vector<double> v = {1, 0, 0, 0, 0, 1, 0, 0};
  const auto out = attention_forward(a, q, k, v);
  const double e = std::exp(1.0);
  EXPECT_NEAR(out[4], 1 / (1 + e), 1e-15);
  EXPECT_NEAR(out[5], e / (1 + e), 1e-15);
  EXPECT_EQ(out[6], 0);
}

TEST(TrainReferenceLayers, AttentionQueryHeadReadsItsGroupsKvHeadInItsOwnSequence) {
  // 4 query heads on 2 KV heads: heads 0 and 1 read KV head 0; batch 2.
  const AttentionDims a{2, 3, 4, 2, 2};
  auto q = random_values(6 * 8, 4), k = random_values(6 * 4, 5), v = random_values(6 * 4, 6);
  const auto before = attention_forward(a, q, k, v);
  for (std::int64_t t = 0; t < 6; ++t) v[t * 4 + 2] += 1, v[t * 4 + 3] += 1, k[t * 4 + 3] -= 1;  // KV head 1
  auto after = attention_forward(a, q, k, v);
  for (std::int64_t t = 0; t < 6; ++t)
    for (int c = 0; c < 8; ++c) {
      if (c < 4)
        EXPECT_EQ(after[t * 8 + c], before[t * 8 + c]) << "token " << t << " column " << c;
      else
        EXPECT_NE(after[t * 8 + c], before[t * 8 + c]) << "token " << t << " column " << c;
    }
  // The second sequence's keys do not reach the first's queries.
  const auto first = attention_forward(a, q, k, v);
  for (std::size_t i = 12; i < k.size(); ++i) k[i] += 3, v[i] -= 3;
  after = attention_forward(a, q, k, v);
  EXPECT_EQ(std::vector<double>(after.begin(), after.begin() + 24),
            std::vector<double>(first.begin(), first.begin() + 24));
}

TEST(TrainReferenceLayers, SwigluIsSiluOfGateTimesUp) {
  const auto act = swiglu_forward({0, 1, -2}, {5, 2, 3});
  EXPECT_EQ(act[0], 0);
  EXPECT_NEAR(act[1], 2 / (1 + std::exp(-1.0)), 1e-15);
  EXPECT_NEAR(act[2], 3 * -2 / (1 + std::exp(2.0)), 1e-15);
  // At gate 0: silu'(0) = 1/2, silu(0) = 0.
  const auto g = swiglu_backward({0}, {4}, {1});
  EXPECT_DOUBLE_EQ(g.d_gate[0], 2);
  EXPECT_DOUBLE_EQ(g.d_up[0], 0);
}

TEST(TrainReferenceLayers, CrossEntropyOfUniformLogitsIsLogVocab) {
  const std::vector<double> logits(3 * 7, 0.25);
  EXPECT_NEAR(cross_entropy_forward(logits, {0, 6, 3}, 3, 7), std::log(7.0), 1e-15);
  // Its gradient: (1/7 - onehot) / 3.
  const auto d = cross_entropy_backward(logits, {0, 6, 3}, 3, 7);
  EXPECT_NEAR(d[0], (1.0 / 7 - 1) / 3, 1e-15);
  EXPECT_NEAR(d[1], 1.0 / 21, 1e-15);
  EXPECT_NEAR(d[7 + 6], (1.0 / 7 - 1) / 3, 1e-15);
  // A confident right answer costs almost nothing; a huge logit does not overflow.
  EXPECT_NEAR(cross_entropy_forward({1000, 0}, {0}, 1, 2), 0, 1e-300);
  EXPECT_THROW(cross_entropy_forward(logits, {0, 7, 3}, 3, 7), std::invalid_argument);
}

// ---- the weights ----

TEST(TrainReferenceWeights, NamedTensorsInOrderWithShapes) {
  const ModelConfig c = tiny(2);
  const ModelWeights w = zero_weights(c);
  const auto t = w.tensors();
  ASSERT_EQ(t.size(), 1u + 9 * 2 + 2);
  EXPECT_EQ(t[0].name, "embedding");
  EXPECT_EQ(t[0].shape, (std::vector<std::int64_t>{11, 16}));
  EXPECT_EQ(t[1].name, "layers.0.attn_norm");
  EXPECT_TRUE(t[1].is_norm());
  EXPECT_EQ(t[3].name, "layers.0.wk");
  EXPECT_EQ(t[3].shape, (std::vector<std::int64_t>{8, 16}));  // kv_dim 2 x 4
  EXPECT_EQ(t[9].name, "layers.0.w_down");
  EXPECT_EQ(t[9].shape, (std::vector<std::int64_t>{16, 24}));
  EXPECT_EQ(t[10].name, "layers.1.attn_norm");
  EXPECT_EQ(t[19].name, "final_norm");
  EXPECT_EQ(t[20].name, "logits");
  std::int64_t elements = 0;
  for (const auto& x : t) elements += static_cast<std::int64_t>(x.values->size());
  // parameter_counts' validate() wants d a multiple of 8: 2 heads on 1 KV head
  // of 8 have the same tensor sizes as 4 on 2 of 4.
  ModelConfig same_sizes = c;
  same_sizes.heads = 2, same_sizes.kv_heads = 1;
  EXPECT_EQ(elements, parameter_counts(same_sizes).total());
}

TEST(TrainReferenceWeights, InitIsSeededSmallAndNormsAreOne) {
  const ModelConfig c = tiny(2);
  const ModelWeights a = init_weights(c, 1), b = init_weights(c, 1), other = init_weights(c, 2);
  EXPECT_EQ(a.layers[1].wq, b.layers[1].wq);
  EXPECT_NE(a.layers[1].wq, other.layers[1].wq);
  EXPECT_NE(a.layers[0].wq, a.layers[1].wq);
  EXPECT_EQ(a.final_norm, std::vector<double>(16, 1.0));
  EXPECT_EQ(a.layers[0].mlp_norm, std::vector<double>(16, 1.0));
  // Uniform in (-1, 1) / sqrt(in): w_down's in is ffn = 24.
  const auto& down = a.layers[0].w_down;
  EXPECT_LE(*std::max_element(down.begin(), down.end()), 1 / std::sqrt(24.0));
  EXPECT_GT(*std::max_element(down.begin(), down.end()), 0.5 / std::sqrt(24.0));
  // Element 0 of tensor 0 by the documented formula.
  const double u = static_cast<double>(splitmix64(splitmix64(1 + 0) + 0) >> 11) * 0x1p-53;
  EXPECT_DOUBLE_EQ(a.embedding[0], (2 * u - 1) / 4);
}

TEST(TrainReferenceWeights, ConfigAndInputsAreChecked) {
  ModelConfig odd = tiny(2);
  odd.hidden = 12, odd.heads = 4;  // d = 3
  EXPECT_THROW(validate_reference_config(odd), std::invalid_argument);
  const ModelConfig c = tiny(2);
  const ModelWeights w = init_weights(c, 1);
  EXPECT_THROW(reference_loss(c, w, {0, 1, 11}, {0, 1, 2}, 1, 3), std::invalid_argument);  // id 11 of vocab 11
  EXPECT_THROW(reference_loss(c, w, {0, 1}, {0, 1, 2}, 1, 3), std::invalid_argument);
  ModelConfig more = c;
  more.layers = 3;
  EXPECT_THROW(reference_loss(more, w, {0, 1, 2}, {0, 1, 2}, 1, 3), std::invalid_argument);
}

// ---- the stack ----

TEST(TrainReferenceStack, GradientsMatchFiniteDifferencesMha) { expect_gradients_match_finite_differences(tiny(4)); }

TEST(TrainReferenceStack, GradientsMatchFiniteDifferencesGqa) { expect_gradients_match_finite_differences(tiny(2)); }

TEST(TrainReferenceStack, FirstTokensLogitsIgnoreLaterTokens) {
  const ModelConfig c = tiny(2);
  const ModelWeights w = init_weights(c, 3);
  std::vector<std::int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8};  // batch 2, seq 4
  const auto before = reference_logits(c, w, tokens, 2, 4);
  tokens[1] = 9, tokens[2] = 10, tokens[3] = 0;
  const auto after = reference_logits(c, w, tokens, 2, 4);
  // Sequence 0's first token, and all of sequence 1, are unchanged.
  EXPECT_EQ(std::vector<double>(after.begin(), after.begin() + 11),
            std::vector<double>(before.begin(), before.begin() + 11));
  EXPECT_EQ(std::vector<double>(after.begin() + 44, after.end()),
            std::vector<double>(before.begin() + 44, before.end()));
  EXPECT_NE(std::vector<double>(after.begin() + 11, after.begin() + 22),
            std::vector<double>(before.begin() + 11, before.begin() + 22));
}

TEST(TrainReferenceStack, ZeroLogitsWeightGivesLogVocab) {
  const ModelConfig c = tiny(2);
  ModelWeights w = init_weights(c, 3);
  w.logits.assign(w.logits.size(), 0.0);
  EXPECT_NEAR(reference_loss(c, w, {1, 2, 3, 4, 5, 6}, {6, 5, 4, 3, 2, 1}, 2, 3), std::log(11.0), 1e-15);
}

// ---- AdamW ----

TEST(TrainReferenceAdamW, TwoStepsByHand) {
  const AdamWConfig a{0.1, 0.9, 0.999, 1e-8, 0.01};
  std::vector<double> w = {1}, m = {0}, v = {0};
  adamw_tensor_step(a, 1, true, w, {0.5}, m, v);
  // m = 0.05, v = 0.00025; m_hat = 0.5, v_hat = 0.25.
  EXPECT_DOUBLE_EQ(m[0], 0.05);
  EXPECT_DOUBLE_EQ(v[0], 0.00025);
  const double w1 = 1 - 0.1 * (0.5 / (0.5 + 1e-8) + 0.01 * 1);
  EXPECT_NEAR(w[0], w1, 1e-15);
  adamw_tensor_step(a, 2, true, w, {-0.25}, m, v);
  const double m2 = 0.9 * 0.05 - 0.1 * 0.25, v2 = 0.999 * 0.00025 + 0.001 * 0.0625;
  const double update = (m2 / (1 - 0.81)) / (std::sqrt(v2 / (1 - 0.999 * 0.999)) + 1e-8);
  EXPECT_NEAR(m[0], m2, 1e-17);
  EXPECT_NEAR(v[0], v2, 1e-18);
  EXPECT_NEAR(w[0], w1 - 0.1 * (update + 0.01 * w1), 1e-15);
  EXPECT_THROW(adamw_tensor_step(a, 0, true, w, {1}, m, v), std::invalid_argument);
}

TEST(TrainReferenceAdamW, DecaysMatricesNotNorms) {
  const ModelConfig c = tiny(2);
  ModelWeights w = init_weights(c, 1);
  const ModelWeights before = w, zero = zero_weights(c);
  AdamWState state = adamw_init(c);
  const AdamWConfig a{0.1, 0.9, 0.95, 1e-8, 0.5};
  adamw_reference_step(a, w, zero, state);  // zero gradients: only the decay moves a weight
  EXPECT_EQ(state.step, 1);
  EXPECT_EQ(w.final_norm, before.final_norm);
  EXPECT_EQ(w.layers[1].attn_norm, before.layers[1].attn_norm);
  EXPECT_DOUBLE_EQ(w.embedding[3], before.embedding[3] * 0.95);
  EXPECT_DOUBLE_EQ(w.layers[1].w_up[5], before.layers[1].w_up[5] * 0.95);
  EXPECT_DOUBLE_EQ(w.logits[7], before.logits[7] * 0.95);
}

TEST(TrainReferenceAdamW, LossFallsOnAFixedBatch) {
  const ModelConfig c = tiny(2);
  ModelWeights w = init_weights(c, 5);
  AdamWState state = adamw_init(c);
  const AdamWConfig a{1e-2, 0.9, 0.95, 1e-8, 0.1};
  const auto tokens = random_tokens(10, c.vocab, 8), targets = random_tokens(10, c.vocab, 9);
  std::vector<double> losses;
  for (int step = 0; step < 20; ++step) {
    const StepResult r = reference_step(c, w, tokens, targets, 2, 5);
    losses.push_back(r.loss);
    adamw_reference_step(a, w, r.grads, state);
  }
  losses.push_back(reference_loss(c, w, tokens, targets, 2, 5));
  for (std::size_t i = 1; i < losses.size(); ++i) EXPECT_LT(losses[i], losses[i - 1]) << "step " << i;
  EXPECT_LT(losses.back(), 0.5 * losses.front());
}
