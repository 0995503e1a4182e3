// The CUDA training stack (kernels/train/train_stack.cuh) on a tiny model:
// every recompute mode gives the gradients of `none` (they run the same
// kernels on the same inputs), the two attention paths agree, gradient
// accumulation over micro-batches adds up, the memory is the model's lists,
// and the loss falls over ten AdamW steps on a fixed batch.
// Against the CPU reference in double (harness/train/train_reference.hpp):
// the same initial weights, the loss and every weight gradient within bf16
// tolerance (3e-2 relative Frobenius) in every recompute mode and on both
// attention paths, and one AdamW step on the stack's own gradients.
// Micro-batches enqueued back to back keep every phase time; the RMSNorm,
// SwiGLU and cross-entropy kernels' 16-byte path and their element-at-a-time
// fallback give the same bits; rotary matches the reference at positions the
// tiny stack never reaches; the BSHD/BHSD copies are the permutation both
// ways, 16 bytes at a time and element by element; cross-entropy matches
// the reference at Llama 3's and GPT-2's vocabularies.
// Exits 77 (skipped) without a GPU, like kernels_gpu_test.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/core/splitmix64.hpp"
#include "harness/train/activation_memory.hpp"
#include "harness/train/model_config.hpp"
#include "harness/train/train_reference.hpp"
#include "harness/train/train_reference_layers.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"
#include "kernels/train/adamw.cuh"
#include "kernels/train/bhsd_transpose.cuh"
#include "kernels/train/cross_entropy.cuh"
#include "kernels/train/rmsnorm.cuh"
#include "kernels/train/rotary.cuh"
#include "kernels/train/swiglu.cuh"
#include "kernels/train/train_stack.cuh"

namespace {

using redline::AttentionChoice;
using redline::ModelConfig;
using redline::Recompute;
using redline::TrainStack;

constexpr std::int64_t kMbs = 2, kSeq = 16;

ModelConfig tiny_config() {
  ModelConfig c;
  c.name = "tiny";
  c.hidden = 64, c.heads = 4, c.kv_heads = 2, c.ffn = 96, c.layers = 2, c.vocab = 50;
  return c;
}

std::vector<std::int32_t> ids(std::uint64_t seed, std::int64_t vocab) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(kMbs * kSeq));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<std::int32_t>(redline::splitmix64(seed + i) % static_cast<std::uint64_t>(vocab));
  return out;
}

// ||a - b|| / ||b||, Frobenius, summed in double (float or double values).
template <typename T>
double relative_error(const std::vector<T>& a, const std::vector<T>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

struct StepOutput {
  float loss = 0;
  std::vector<std::vector<float>> grads;  // per tensor, in the stack's order
};

class TrainGpu : public ::testing::Test {
 protected:
  void SetUp() override { REDLINE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  void TearDown() override { (void)cudaStreamDestroy(stream_); }

  // nullptr (and a skip) when cuDNN refuses the tiny shape.
  std::unique_ptr<TrainStack> make(Recompute mode, AttentionChoice attention) {
    try {
      return std::make_unique<TrainStack>(tiny_config(), kMbs, kSeq, mode, attention, stream_, 5);
    } catch (const std::runtime_error& e) {
      if (attention == AttentionChoice::cudnn && std::string(e.what()).find("cuDNN") != std::string::npos) {
        skip_reason_ = e.what();
        return nullptr;
      }
      throw;
    }
  }

  StepOutput one_step(TrainStack& stack, int micro_batches = 1) {
    StepOutput out;
    stack.zero_grads();
    stack.set_gradient_accumulation(micro_batches);
    stack.set_batch(ids(11, 50), ids(23, 50));
    for (int i = 0; i < micro_batches; ++i) out.loss = stack.forward_backward();
    for (std::size_t i = 0; i < stack.tensors().size(); ++i) out.grads.push_back(stack.gradient(i));
    return out;
  }

  void expect_same_grads(const TrainStack& stack, const StepOutput& got, const StepOutput& want, double tolerance,
                         const std::string& what) {
    EXPECT_NEAR(got.loss, want.loss, 1e-3 * std::abs(want.loss)) << what;
    for (std::size_t i = 0; i < want.grads.size(); ++i) {
      const double error = relative_error(got.grads[i], want.grads[i]);
      EXPECT_LE(error, tolerance) << what << " " << stack.tensors()[i].name;
      if (error > 0) std::printf("  %s %s rel %.3g\n", what.c_str(), stack.tensors()[i].name.c_str(), error);
    }
  }

  cudaStream_t stream_ = nullptr;
  std::string skip_reason_;
};

}  // namespace

// Same kernels, same inputs: the recomputed tensors are bit-identical to
// the saved ones, so only the order of the embedding gradient's atomic adds
// (a token repeated in the batch) may differ. 1e-3 allows that and nothing
// else of consequence.
TEST_F(TrainGpu, EveryRecomputeModeGivesTheGradientsOfNone) {
  for (AttentionChoice attention : {AttentionChoice::cudnn, AttentionChoice::unfused}) {
    auto none = make(Recompute::none, attention);
    if (!none) {
      std::printf("  cudnn skipped: %s\n", skip_reason_.c_str());
      continue;
    }
    const StepOutput want = one_step(*none);
    EXPECT_TRUE(std::isfinite(want.loss));
    for (Recompute mode : {Recompute::selective, Recompute::full}) {
      auto stack = make(mode, attention);
      expect_same_grads(*stack, one_step(*stack), want, 1e-3,
                        std::string(redline::recompute_name(mode)) + " " + redline::attention_choice_name(attention));
    }
  }
}

// Different attention kernels: bf16 tolerance.
TEST_F(TrainGpu, TheAttentionPathsAgree) {
  auto fused = make(Recompute::none, AttentionChoice::cudnn);
  if (!fused) GTEST_SKIP() << skip_reason_;
  auto unfused = make(Recompute::none, AttentionChoice::unfused);
  const StepOutput want = one_step(*unfused);
  expect_same_grads(*fused, one_step(*fused), want, 3e-2, "cudnn vs unfused");
}

// Two micro-batches of the same batch at accumulation 2 add up to one
// micro-batch's gradient (the weight-gradient GEMMs' beta = 1).
TEST_F(TrainGpu, GradientsAccumulateOverMicroBatches) {
  auto stack = make(Recompute::selective, AttentionChoice::unfused);
  const StepOutput once = one_step(*stack, 1);
  expect_same_grads(*stack, one_step(*stack, 2), once, 1e-3, "accumulated");
}

// Micro-batches enqueued back to back with one wait at the end (as
// train_step_bench run does) give what waiting after each gives, and the
// phase times sum every micro-batch since zero_grads(), not only the last.
TEST_F(TrainGpu, MicroBatchesEnqueuedBackToBackKeepEveryPhaseTime) {
  auto stack = make(Recompute::selective, AttentionChoice::unfused);
  const StepOutput waited = one_step(*stack, 3);
  stack->zero_grads();
  stack->set_gradient_accumulation(3);
  for (int i = 0; i < 3; ++i) stack->enqueue_forward_backward();
  StepOutput enqueued;
  enqueued.loss = stack->last_loss();
  for (std::size_t i = 0; i < stack->tensors().size(); ++i) enqueued.grads.push_back(stack->gradient(i));
  expect_same_grads(*stack, enqueued, waited, 1e-3, "enqueued");
  const redline::PhaseTimes times = stack->last_phase_times();
  EXPECT_EQ(times.micro_batches, 3);
  EXPECT_GT(times.forward_ms, 0);
  EXPECT_GT(times.backward_ms, 0);
  stack->zero_grads();
  EXPECT_EQ(stack->last_phase_times().micro_batches, 0) << "zero_grads starts a new accumulation";
}

// The calls timed alone are every GEMM and attention call of one
// micro-batch: per layer 7 forward GEMMs (q, k, v, o, gate, up, down) and
// 14 backward (data and weight gradients), full recompute's rerun adding 6
// (no down projection: its output is not needed), and the logits' 3; one
// attention forward and one backward per layer, full adding a forward.
TEST_F(TrainGpu, PartsAloneTimeEveryGemmAndAttentionCall) {
  const std::int64_t layers = tiny_config().layers;
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    SCOPED_TRACE(redline::recompute_name(mode));
    auto stack = make(mode, AttentionChoice::unfused);
    one_step(*stack);
    const redline::PartsAlone parts = stack->time_parts_alone(redline::fixed_count_policy(2));
    const bool full = mode == Recompute::full;
    EXPECT_EQ(parts.gemm_calls, layers * (full ? 27 : 21) + 3);
    EXPECT_EQ(parts.attention_calls, layers * (full ? 3 : 2));
    EXPECT_GT(parts.gemm_ms, 0);
    EXPECT_GT(parts.attention_ms, 0);
    // Recording stopped with the call: a later micro-batch still trains (a
    // recorder left set would append to the lists time_parts_alone freed).
    EXPECT_TRUE(std::isfinite(one_step(*stack).loss));
  }
}

// Weights drawn at 1/sqrt(fan-in): the first loss is near ln(vocab).
TEST_F(TrainGpu, TheFirstLossIsNearUniform) {
  auto stack = make(Recompute::none, AttentionChoice::unfused);
  const float loss = one_step(*stack).loss;
  EXPECT_GT(loss, std::log(50.0) - 0.5);
  EXPECT_LT(loss, std::log(50.0) + 1.0);
}

TEST_F(TrainGpu, TheLossFallsOverTenAdamWSteps) {
  for (AttentionChoice attention : {AttentionChoice::cudnn, AttentionChoice::unfused}) {
    auto stack = make(Recompute::full, attention);
    if (!stack) continue;
    redline::AdamWSettings adamw;
    adamw.lr = 1e-2;
    std::vector<float> losses;
    for (int step = 0; step < 10; ++step) {
      losses.push_back(one_step(*stack).loss);
      stack->optimizer_step(adamw);
    }
    losses.push_back(one_step(*stack).loss);
    std::printf("  %s loss %.4f -> %.4f\n", redline::attention_choice_name(attention), losses.front(), losses.back());
    EXPECT_LT(losses.back(), 0.8f * losses.front()) << redline::attention_choice_name(attention);
    EXPECT_EQ(stack->optimizer_steps(), 10);
    const redline::PhaseTimes times = stack->last_phase_times();
    EXPECT_GT(times.forward_ms, 0);
    EXPECT_GT(times.backward_ms, 0);
    EXPECT_GT(times.optimizer_ms, 0);
  }
}

// What the stack allocated is the memory model's lists, each tensor padded
// to 256 bytes at most, and the state arrays padded to 128 elements a tensor.
TEST_F(TrainGpu, AllocationsAreTheMemoryModelsLists) {
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    auto stack = make(mode, AttentionChoice::unfused);
    const ModelConfig c = tiny_config();
    const redline::MemoryPrediction p = redline::predict_memory(c, kMbs, kSeq, mode);
    const redline::AllocatedBytes got = stack->allocated();
    const std::int64_t per_layer = static_cast<std::int64_t>(redline::saved_per_layer(c, kMbs, kSeq, mode).size());
    const std::int64_t outside = static_cast<std::int64_t>(redline::saved_outside_layers(c, kMbs, kSeq).size());
    EXPECT_GE(got.activations, p.activation_bytes);
    EXPECT_LE(got.activations, p.activation_bytes + 256 * (per_layer * c.layers + outside));
    EXPECT_GE(got.working, p.working_bytes);
    EXPECT_LE(got.working, p.working_bytes + 256 * std::int64_t(redline::backward_working_set(c, kMbs, kSeq, mode).size()));
    EXPECT_GE(got.state, p.state.total());
    EXPECT_LE(got.state, p.state.total() + 18 * 128 * std::int64_t(stack->tensors().size()));
  }
}

TEST_F(TrainGpu, LoadedWeightsAreTheStacks) {
  auto stack = make(Recompute::none, AttentionChoice::unfused);
  std::vector<float> norm(64, 0.5f);
  stack->load_weight(1, norm);
  EXPECT_EQ(stack->master_weight(1), norm);
  EXPECT_EQ(stack->tensors()[1].name, "layers.0.attn_norm");
  EXPECT_THROW(stack->load_weight(1, std::vector<float>(3)), std::invalid_argument);
  EXPECT_THROW(stack->set_batch(ids(1, 50), std::vector<std::int32_t>(kMbs * kSeq, 50)), std::invalid_argument);
}

namespace {

std::vector<float> as_float(const std::vector<double>& values) { return {values.begin(), values.end()}; }
std::vector<double> as_double(const std::vector<float>& values) { return {values.begin(), values.end()}; }

}  // namespace

// The device draws the reference's init_weights formula: the same values,
// rounded once to fp32.
TEST_F(TrainGpu, InitialWeightsAreTheReferences) {
  auto stack = make(Recompute::none, AttentionChoice::unfused);
  const redline::ModelWeights weights = redline::init_weights(tiny_config(), 5);
  const auto tensors = weights.tensors();
  ASSERT_EQ(tensors.size(), stack->tensors().size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(stack->tensors()[i].name, tensors[i].name);
    EXPECT_LE(relative_error(stack->master_weight(i), as_float(*tensors[i].values)), 1e-7) << tensors[i].name;
  }
}

TEST_F(TrainGpu, LossAndGradientsMatchTheReference) {
  const ModelConfig config = tiny_config();
  const redline::ModelWeights weights = redline::init_weights(config, 5);
  const redline::StepResult want = redline::reference_step(config, weights, ids(11, 50), ids(23, 50), kMbs, kSeq);
  const auto want_grads = want.grads.tensors();
  for (AttentionChoice attention : {AttentionChoice::cudnn, AttentionChoice::unfused})
    for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
      auto stack = make(mode, attention);
      if (!stack) continue;
      const std::string what = std::string(redline::recompute_name(mode)) + " " + redline::attention_choice_name(attention);
      const StepOutput got = one_step(*stack);
      EXPECT_NEAR(got.loss, want.loss, 3e-2 * want.loss) << what;
      for (std::size_t i = 0; i < want_grads.size(); ++i) {
        const double error = relative_error(got.grads[i], as_float(*want_grads[i].values));
        EXPECT_LE(error, 3e-2) << what << " " << want_grads[i].name;
        std::printf("  %s %s rel %.3g\n", what.c_str(), want_grads[i].name.c_str(), error);
      }
    }
}

// One AdamW step on the stack's own gradients, against the reference's
// AdamW in double from the same weights: fp32 arithmetic only.
TEST_F(TrainGpu, AdamWMatchesTheReference) {
  auto stack = make(Recompute::none, AttentionChoice::unfused);
  const StepOutput step = one_step(*stack);
  const ModelConfig config = tiny_config();
  redline::ModelWeights weights = redline::zero_weights(config), grads = redline::zero_weights(config);
  auto weight_tensors = weights.tensors();
  auto grad_tensors = grads.tensors();
  for (std::size_t i = 0; i < weight_tensors.size(); ++i) {
    *weight_tensors[i].values = as_double(stack->master_weight(i));
    *grad_tensors[i].values = as_double(step.grads[i]);
  }
  redline::AdamWConfig reference_settings;
  redline::AdamWState state = redline::adamw_init(config);
  redline::AdamWSettings settings;
  settings.lr = reference_settings.lr, settings.beta1 = reference_settings.beta1;
  settings.beta2 = reference_settings.beta2, settings.eps = reference_settings.eps;
  settings.weight_decay = reference_settings.weight_decay;
  for (int round = 0; round < 2; ++round) {  // the second step's bias correction too
    redline::adamw_reference_step(reference_settings, weights, grads, state);
    stack->optimizer_step(settings);
  }
  weight_tensors = weights.tensors();
  for (std::size_t i = 0; i < weight_tensors.size(); ++i)
    EXPECT_LE(relative_error(stack->master_weight(i), as_float(*weight_tensors[i].values)), 1e-5)
        << weight_tensors[i].name;
}

namespace {

// Random values copied to the device `shift` elements past an aligned
// start: shift 1 puts every row off 16-byte alignment, so the kernels take
// their element-at-a-time path. The copy is on the kernels' stream (a
// non-blocking one does not wait for the legacy stream's copies).
struct ShiftedBf16 {
  redline::DeviceBuffer<__nv_bfloat16> memory;
  __nv_bfloat16* data;
  ShiftedBf16(std::size_t count, int shift, std::uint64_t seed, cudaStream_t stream)
      : memory(count + 8), data(memory.data() + shift) {
    std::vector<__nv_bfloat16> host(count);
    for (std::size_t i = 0; i < count; ++i)  // uniform in [-2, 2)
      host[i] = __float2bfloat16(static_cast<float>(redline::splitmix64(seed * 100003 + i) >> 11) * 0x1.0p-53f * 4 - 2);
    REDLINE_CUDA_CHECK(
        cudaMemcpyAsync(data, host.data(), count * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice, stream));
    REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));  // before `host` goes
  }
  std::vector<std::uint16_t> bits(std::size_t count) const {
    std::vector<std::uint16_t> out(count);
    REDLINE_CUDA_CHECK(cudaMemcpy(out.data(), data, count * sizeof(std::uint16_t), cudaMemcpyDeviceToHost));
    return out;
  }
};

template <typename T>
std::vector<T> to_host(const redline::DeviceBuffer<T>& buffer) {
  std::vector<T> out(buffer.size());
  REDLINE_CUDA_CHECK(cudaMemcpy(out.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost));
  return out;
}

struct KernelOutputs {
  std::vector<std::uint16_t> y, d_x, act, d_gate, d_up, d_logits;
  std::vector<float> rstd, d_weight, losses;
};

// Cross-entropy on 40 rows of a vocabulary of 72 (x as the logits).
void run_cross_entropy(const ShiftedBf16& logits, KernelOutputs& out, cudaStream_t stream) {
  constexpr std::int64_t rows = 40, vocab = 72;
  std::vector<std::int32_t> host_targets(rows);
  for (std::int64_t t = 0; t < rows; ++t)
    host_targets[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(t * 7 % vocab);
  redline::DeviceBuffer<std::int32_t> targets(rows);
  redline::DeviceBuffer<float> losses(rows);
  REDLINE_CUDA_CHECK(
      cudaMemcpyAsync(targets.data(), host_targets.data(), targets.bytes(), cudaMemcpyHostToDevice, stream));
  redline::cross_entropy_forward_backward(logits.data, targets.data(), losses.data(), rows, vocab, 0.25f, stream);
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
  out.d_logits = logits.bits(rows * vocab);
  out.losses = to_host(losses);
}

// RMSNorm forward, backward and weight gradient, and SwiGLU forward and
// backward on 40 rows of 72 (the weight gradient in 5 chunks of 8 rows),
// SwiGLU on a count that leaves a partial last pack; then cross-entropy.
KernelOutputs run_packed_kernels(int shift, cudaStream_t stream) {
  constexpr std::int64_t rows = 40, width = 72, n = rows * width, count = n - 3;
  // The outputs start random too: what a kernel leaves unwritten must match.
  const ShiftedBf16 x(n, shift, 1, stream), d_y(n, shift, 2, stream), residual(n, shift, 3, stream);
  const ShiftedBf16 w(width, shift, 4, stream), y(n, shift, 5, stream), d_x(n, shift, 6, stream);
  const ShiftedBf16 act(n, shift, 7, stream), d_gate(n, shift, 8, stream), d_up(n, shift, 9, stream);
  redline::DeviceBuffer<float> rstd(rows), d_weight(width), scratch(64 * width);
  REDLINE_CUDA_CHECK(cudaMemsetAsync(d_weight.data(), 0, d_weight.bytes(), stream));
  redline::rmsnorm_forward(x.data, w.data, y.data, rstd.data(), rows, width, 1e-5f, stream);
  redline::rmsnorm_backward(d_y.data, x.data, w.data, rstd.data(), residual.data, d_x.data, rows, width, stream);
  redline::rmsnorm_weight_grad(d_y.data, x.data, rstd.data(), d_weight.data(), rows, width, scratch.data(),
                               scratch.bytes(), stream);
  redline::swiglu_forward(x.data, d_y.data, act.data, count, stream);
  redline::swiglu_backward(residual.data, x.data, d_y.data, d_gate.data, d_up.data, count, stream);
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
  KernelOutputs out{y.bits(n), d_x.bits(n), act.bits(n), d_gate.bits(n), d_up.bits(n), {}, to_host(rstd),
                    to_host(d_weight), {}};
  run_cross_entropy(x, out, stream);
  return out;
}

}  // namespace

// The 16-byte path and the element-at-a-time fallback give the same bits:
// each thread reads the same elements and sums them in the same order either
// way. The stack's arenas take the 16-byte path wherever the width allows
// (the tiny stack's vocabulary of 50 does not: its cross-entropy takes the
// fallback), so this test is what runs the other path of each kernel.
TEST_F(TrainGpu, PackedAndElementwiseAccessGiveTheSameBits) {
  const KernelOutputs packed = run_packed_kernels(0, stream_), elementwise = run_packed_kernels(1, stream_);
  EXPECT_EQ(packed.y, elementwise.y);
  EXPECT_EQ(packed.d_x, elementwise.d_x);
  EXPECT_EQ(packed.act, elementwise.act);
  EXPECT_EQ(packed.d_gate, elementwise.d_gate);
  EXPECT_EQ(packed.d_up, elementwise.d_up);
  EXPECT_EQ(packed.rstd, elementwise.rstd);
  EXPECT_EQ(packed.d_weight, elementwise.d_weight);
  EXPECT_EQ(packed.d_logits, elementwise.d_logits);
  EXPECT_EQ(packed.losses, elementwise.losses);
  for (float loss : packed.losses) EXPECT_TRUE(std::isfinite(loss) && loss > 0);
  for (float r : packed.rstd) EXPECT_TRUE(std::isfinite(r) && r > 0);
}

namespace {

std::vector<double> bf16_bits_to_doubles(const std::vector<std::uint16_t>& bits) {
  std::vector<double> out(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) {
    const std::uint32_t word = static_cast<std::uint32_t>(bits[i]) << 16;
    float value = 0;
    std::memcpy(&value, &word, sizeof value);
    out[i] = value;
  }
  return out;
}

}  // namespace

// Rotary at Llama 3's theta over two sequences of 8192 (angles up to 8191
// rad), nine heads of 128 (576 pairs a token: each thread of a 256-thread
// block takes two or three, the last round partial), against the reference's double rotation of the same bf16 inputs:
// only the output's bf16 rounding apart (1.6e-3 relative, simulated). A wrong
// frequency, position, pair or sign is off by O(1). The backward turns it
// back, two roundings from the input (1.5e-3).
TEST_F(TrainGpu, RotaryMatchesTheReferenceAtLongPositions) {
  constexpr std::int64_t seq = 8192, tokens = 2 * seq, heads = 9, head_dim = 128, n = tokens * heads * head_dim;
  const redline::RotaryShape shape{tokens, seq, heads, head_dim, 500000};
  const ShiftedBf16 x(n, 0, 11, stream_);
  const std::vector<double> input = bf16_bits_to_doubles(x.bits(n));
  redline::rotary_forward(x.data, shape, stream_);
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  const std::vector<double> turned = bf16_bits_to_doubles(x.bits(n));
  redline::rotary_backward(x.data, shape, stream_);
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  const std::vector<double> back = bf16_bits_to_doubles(x.bits(n));
  const redline::train_ref::RopeDims dims{seq, heads, head_dim, 500000};
  const double forward_error = relative_error(turned, redline::train_ref::rope_forward(input, tokens, dims));
  const double round_trip_error = relative_error(back, input);
  std::printf("  rotary: forward %.3g, round trip %.3g relative\n", forward_error, round_trip_error);
  EXPECT_LT(forward_error, 4e-3);
  EXPECT_LT(round_trip_error, 4e-3);
}

// The unfused path's layout copies against the permutation written out on
// the host, on aligned rows (16-byte copies) and on rows shifted one element
// (the element-by-element fallback), and back again.
TEST_F(TrainGpu, LayoutCopiesAreThePermutationBothWays) {
  const redline::HeadsShape shape{2, 5, 3, 16};  // batch, seq, heads, head_dim
  const std::size_t n = 2 * 5 * 3 * 16;
  for (int shift : {0, 1}) {
    const ShiftedBf16 bshd(n, shift, 21, stream_), bhsd(n, shift, 22, stream_), back(n, shift, 23, stream_);
    redline::bshd_to_bhsd(bshd.data, bhsd.data, shape, stream_);
    redline::bhsd_to_bshd(bhsd.data, back.data, shape, stream_);
    REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const std::vector<std::uint16_t> input = bshd.bits(n), permuted = bhsd.bits(n), returned = back.bits(n);
    std::vector<std::uint16_t> expected(n);
    for (std::int64_t b = 0; b < shape.batch; ++b)
      for (std::int64_t pos = 0; pos < shape.seq; ++pos)
        for (std::int64_t head = 0; head < shape.heads; ++head)
          for (std::int64_t e = 0; e < shape.head_dim; ++e)
            expected[static_cast<std::size_t>(((b * shape.heads + head) * shape.seq + pos) * shape.head_dim + e)] =
                input[static_cast<std::size_t>(((b * shape.seq + pos) * shape.heads + head) * shape.head_dim + e)];
    EXPECT_EQ(permuted, expected) << "shift " << shift;
    EXPECT_EQ(returned, input) << "shift " << shift;
  }
}

// Cross-entropy on rows of Llama 3's vocabulary (the 16-byte path) and
// GPT-2's (50257: the element fallback), against the reference in double on
// the same bf16 logits. The logits climb along each row (uniform in [-2, 2)
// plus 6 j / vocab), so each thread's running maximum grows over its ~60
// packs and the online sum is rescaled again and again; a tiny vocabulary
// never does that. Loss: fp32 sums of 1e5 terms, well within 1e-3; the
// gradient: its bf16 rounding (~2e-3 relative), over the whole tensor and
// over the entries off the targets alone (the three targets' -1/3 would
// otherwise outweigh every other entry's error).
TEST_F(TrainGpu, CrossEntropyMatchesTheReferenceAtRealVocabularies) {
  constexpr std::int64_t rows = 3;
  for (const std::int64_t vocab : {std::int64_t{128256}, std::int64_t{50257}}) {
    const std::size_t n = static_cast<std::size_t>(rows * vocab);
    std::vector<__nv_bfloat16> host(n);
    std::vector<double> logits(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double u = static_cast<double>(redline::splitmix64(31 * i + 7) >> 11) * 0x1.0p-53;
      host[i] = __float2bfloat16(static_cast<float>(4 * u - 2 + 6.0 * static_cast<double>(i % vocab) / vocab));
      logits[i] = __bfloat162float(host[i]);
    }
    const std::vector<std::int32_t> targets = {0, static_cast<std::int32_t>(vocab / 2),
                                               static_cast<std::int32_t>(vocab - 1)};
    redline::DeviceBuffer<__nv_bfloat16> device_logits(n);
    redline::DeviceBuffer<std::int32_t> device_targets(rows);
    redline::DeviceBuffer<float> losses(rows);
    REDLINE_CUDA_CHECK(cudaMemcpy(device_logits.data(), host.data(), device_logits.bytes(), cudaMemcpyHostToDevice));
    REDLINE_CUDA_CHECK(
        cudaMemcpy(device_targets.data(), targets.data(), device_targets.bytes(), cudaMemcpyHostToDevice));
    redline::cross_entropy_forward_backward(device_logits.data(), device_targets.data(), losses.data(), rows, vocab,
                                            1.0f / rows, stream_);
    REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const std::vector<float> row_losses = to_host(losses);
    double mean = 0;
    for (float loss : row_losses) mean += loss / rows;
    const std::vector<__nv_bfloat16> grads = to_host(device_logits);
    std::vector<double> grad(n);
    for (std::size_t i = 0; i < n; ++i) grad[i] = __bfloat162float(grads[i]);
    const double expected_mean = redline::train_ref::cross_entropy_forward(logits, targets, rows, vocab);
    const std::vector<double> expected_grad = redline::train_ref::cross_entropy_backward(logits, targets, rows, vocab);
    std::vector<double> off_target = grad, expected_off_target = expected_grad;
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto at = static_cast<std::size_t>(r * vocab + targets[static_cast<std::size_t>(r)]);
      off_target[at] = expected_off_target[at] = 0;
    }
    const double grad_error = relative_error(grad, expected_grad);
    const double off_target_error = relative_error(off_target, expected_off_target);
    std::printf("  cross-entropy, vocab %lld: loss %.6f (reference %.6f), gradient %.3g relative (%.3g off the "
                "targets)\n",
                static_cast<long long>(vocab), mean, expected_mean, grad_error, off_target_error);
    EXPECT_NEAR(mean, expected_mean, 1e-3) << "vocab " << vocab;
    EXPECT_LT(grad_error, 1e-2) << "vocab " << vocab;
    EXPECT_LT(off_target_error, 1e-2) << "vocab " << vocab;
  }
}

// adamw_update's four-elements-a-thread path and its tail (4 x 257 + 3
// elements) against adamw.cuh's formula in double, the bf16 copy against
// the new master weights rounded, and an unaligned array refused.
TEST_F(TrainGpu, AdamWQuadsAndTheirTailMatchTheFormula) {
  constexpr std::size_t n = 4 * 257 + 3;
  const auto uniform = [](std::uint64_t seed, std::size_t i, float low, float high) {
    return low + (high - low) * static_cast<float>(redline::splitmix64(seed * 1000003 + i) >> 40) * 0x1.0p-24f;
  };
  std::vector<float> master(n), grad(n), m(n), v(n);
  for (std::size_t i = 0; i < n; ++i) {
    master[i] = uniform(1, i, -1, 1), grad[i] = uniform(2, i, -1e-2f, 1e-2f);
    m[i] = uniform(3, i, -1e-2f, 1e-2f), v[i] = uniform(4, i, 0, 1e-4f);
  }
  redline::DeviceBuffer<float> d_master(n), d_grad(n), d_m(n), d_v(n);
  redline::DeviceBuffer<__nv_bfloat16> d_weights(n);
  for (auto [device, host] : {std::pair{&d_master, &master}, {&d_grad, &grad}, {&d_m, &m}, {&d_v, &v}})
    REDLINE_CUDA_CHECK(cudaMemcpyAsync(device->data(), host->data(), n * 4, cudaMemcpyHostToDevice, stream_));
  const redline::AdamWSettings settings;
  constexpr std::int64_t kStep = 3;
  redline::adamw_update(d_master.data(), d_grad.data(), d_m.data(), d_v.data(), d_weights.data(), n, settings, kStep,
                        true, stream_);
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  const std::vector<float> got_master = to_host(d_master), got_m = to_host(d_m), got_v = to_host(d_v);
  const std::vector<__nv_bfloat16> got_weights = to_host(d_weights);
  const double c1 = 1 - std::pow(settings.beta1, kStep), c2 = 1 - std::pow(settings.beta2, kStep);
  for (std::size_t i = 0; i < n; ++i) {
    const double m_new = settings.beta1 * m[i] + (1 - settings.beta1) * grad[i];
    const double v_new = settings.beta2 * v[i] + (1 - settings.beta2) * double(grad[i]) * grad[i];
    const double w = master[i] - settings.lr * (m_new / c1 / (std::sqrt(v_new / c2) + settings.eps) +
                                                settings.weight_decay * master[i]);
    // The tolerance scales with the terms, not the sum: b1 m and (1 - b1) g
    // may nearly cancel, and the kernel's 1 - b1 is rounded to float.
    const double m_terms = settings.beta1 * std::abs(m[i]) + (1 - settings.beta1) * std::abs(grad[i]);
    const double v_terms = settings.beta2 * v[i] + (1 - settings.beta2) * double(grad[i]) * grad[i];
    EXPECT_NEAR(got_m[i], m_new, 1e-6 * m_terms + 1e-12) << "element " << i;
    EXPECT_NEAR(got_v[i], v_new, 1e-6 * v_terms + 1e-15) << "element " << i;
    EXPECT_NEAR(got_master[i], w, 1e-6 * std::abs(w) + 1e-9) << "element " << i;
    const __nv_bfloat16 rounded = __float2bfloat16(got_master[i]);
    EXPECT_EQ(std::memcmp(&got_weights[i], &rounded, sizeof rounded), 0) << "element " << i;
  }
  EXPECT_THROW(redline::adamw_update(d_master.data() + 1, d_grad.data(), d_m.data(), d_v.data(), d_weights.data(),
                                     4, settings, kStep, true, stream_),
               std::invalid_argument);
}
