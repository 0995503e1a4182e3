// TrainStack: buffers from the memory model's lists, the stack's forward
// (embedding, layers, final norm, logits, loss) and backward in reverse,
// per-phase events and NVTX ranges.
#include "kernels/train/train_stack.cuh"

#include <cuda_bf16.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda_check.cuh"
#include "kernels/runner/event_timer.cuh"
#include "kernels/nvtx_range.cuh"
#include "kernels/train/cross_entropy.cuh"
#include "kernels/train/embedding.cuh"
#include "kernels/train/rmsnorm.cuh"
#include "kernels/train/tensor_arena.cuh"
#include "kernels/train/train_layer.cuh"

namespace redline {

using bf16 = __nv_bfloat16;

struct TrainStack::State {
  ModelConfig config;
  std::int64_t mbs, seq;
  Recompute mode;
  cudaStream_t stream;
  // The GEMM workspace and cuDNN's graphs first: they are small but fail in
  // ways that do not say "out of memory" (a cuDNN build error), so they must
  // not be the allocation that meets a full GPU; the large arenas after them
  // fail as CUDA out of memory. What still comes after the arenas: each
  // GEMM's plan (a cuBLASLt handle and a heuristic query) on first use, and
  // the lazy loading of each kernel's module at its first launch, a few MiB
  // in all, against the GiBs a micro-batch step moves the peak by.
  TrainGemms gemms;
  TrainAttention attention;
  TrainParameters parameters;
  std::vector<TensorArena> saved;  // per layer
  TensorArena outside, working;
  DeviceBuffer<float> loss{1};
  std::int64_t accumulation = 1;
  // A pair of timers per micro-batch since zero_grads(), so micro-batches
  // enqueued back to back keep every elapsed time until last_phase_times()
  // reads them after a single wait.
  struct MicroBatchTimers {
    EventTimer forward, backward;
  };
  std::vector<MicroBatchTimers> micro_batch_timers;
  std::size_t timed_micro_batches = 0;
  EventTimer optimizer_timer;
  bool optimizer_timed = false;

  State(const ModelConfig& c, std::int64_t b, std::int64_t s, Recompute m, AttentionChoice a, cudaStream_t st,
        std::uint64_t seed);
  std::int64_t tokens() const { return mbs * seq; }
  LayerContext context() { return {&config, mbs, seq, &gemms, &attention, &parameters, stream}; }
  bf16* out(const char* name) const { return outside.get<bf16>(name); }
  LayerActivations activations(std::int64_t layer) const;
  LayerGradients gradients() const;
  bf16* layer_output(std::int64_t layer) const;
  void forward();
  void backward();
};

TrainStack::State::State(const ModelConfig& c, std::int64_t b, std::int64_t s, Recompute m, AttentionChoice a,
                         cudaStream_t st, std::uint64_t seed)
    : config(c),
      mbs(b),
      seq(s),
      mode(m),
      stream(st),
      gemms(static_cast<std::size_t>(cublaslt_workspace_bytes())),
      attention(c, b, s, a, gemms.workspace(), st),
      parameters(c, seed, st),
      outside(saved_outside_layers(c, b, s)),
      working(backward_working_set(c, b, s, m)) {
  for (std::int64_t i = 0; i < c.layers; ++i) saved.emplace_back(saved_per_layer(c, b, s, m));
}

// A tensor the mode keeps is the layer's own; one it drops lives in the
// working set's recomputed_<name>, shared by every layer.
LayerActivations TrainStack::State::activations(std::int64_t layer) const {
  const TensorArena& own = saved.at(static_cast<std::size_t>(layer));
  const auto at = [&](const std::string& name) { return own.has(name) ? own.at(name) : working.at("recomputed_" + name); };
  LayerActivations a;
  a.x = static_cast<bf16*>(at("x")), a.n1 = static_cast<bf16*>(at("n1")), a.q = static_cast<bf16*>(at("q"));
  a.k = static_cast<bf16*>(at("k")), a.v = static_cast<bf16*>(at("v")), a.o = static_cast<bf16*>(at("o"));
  a.h1 = static_cast<bf16*>(at("h1")), a.n2 = static_cast<bf16*>(at("n2")), a.gate = static_cast<bf16*>(at("gate"));
  a.up = static_cast<bf16*>(at("up")), a.act = static_cast<bf16*>(at("act"));
  a.rstd1 = static_cast<float*>(at("rstd1")), a.lse = static_cast<float*>(at("lse"));
  a.rstd2 = static_cast<float*>(at("rstd2"));
  return a;
}

LayerGradients TrainStack::State::gradients() const {
  const auto at = [&](const char* name) { return working.get<bf16>(name); };
  LayerGradients g;
  g.d_residual_a = at("d_residual_a"), g.d_residual_b = at("d_residual_b"), g.d_n = at("d_n"), g.d_o = at("d_o");
  g.d_q = at("d_q"), g.d_k = at("d_k"), g.d_v = at("d_v"), g.d_gate = at("d_gate"), g.d_up = at("d_up");
  g.d_act = at("d_act");
  return g;
}

// Layer i's output is layer i + 1's saved input; the last one's is final_x.
bf16* TrainStack::State::layer_output(std::int64_t layer) const {
  if (layer + 1 < config.layers) return saved.at(static_cast<std::size_t>(layer + 1)).get<bf16>("x");
  return out("final_x");
}

void TrainStack::State::forward() {
  const NvtxRange range("forward");
  const std::int64_t t = tokens(), h = config.hidden, v = config.vocab;
  const std::size_t last = parameters.tensors().size() - 1;
  embedding_forward(outside.get<std::int32_t>("tokens"), parameters.weight(0), activations(0).x, t, h, stream);
  for (std::int64_t i = 0; i < config.layers; ++i) {
    const NvtxRange layer_range(("forward layer " + std::to_string(i)).c_str());
    layer_forward(context(), i, activations(i), layer_output(i));
  }
  rmsnorm_forward(out("final_x"), parameters.weight(last - 1), out("final_n"), outside.get<float>("final_rstd"), t, h,
                  static_cast<float>(config.norm_eps), stream);
  gemms.linear(out("final_n"), parameters.weight(last), out("logits"), t, h, v, nullptr, stream);
  const float grad_scale = 1.0f / static_cast<float>(t * accumulation);
  cross_entropy_forward_backward(out("logits"), outside.get<std::int32_t>("targets"), outside.get<float>("losses"), t,
                                 v, grad_scale, stream);
  mean_loss(outside.get<float>("losses"), t, loss.data(), stream);
}

void TrainStack::State::backward() {
  const NvtxRange range("backward");
  const std::int64_t t = tokens(), h = config.hidden, v = config.vocab;
  const std::size_t last = parameters.tensors().size() - 1;
  const LayerGradients g = gradients();
  // The logits buffer holds d logits now (cross_entropy_forward_backward).
  gemms.weight_grad(out("logits"), out("final_n"), parameters.grad(last), t, h, v, stream);
  gemms.data_grad(out("logits"), parameters.weight(last), g.d_n, t, h, v, false, stream);
  const float* final_rstd = outside.get<float>("final_rstd");
  const LtWorkspace scratch = gemms.workspace();  // between GEMMs, as the layers' norms (train_layer.cu)
  rmsnorm_weight_grad(g.d_n, out("final_x"), final_rstd, parameters.grad(last - 1), t, h, scratch.data, scratch.bytes,
                      stream);
  rmsnorm_backward(g.d_n, out("final_x"), parameters.weight(last - 1), final_rstd, nullptr, g.d_residual_a, t, h,
                   stream);
  for (std::int64_t i = config.layers - 1; i >= 0; --i) {
    const NvtxRange layer_range(("backward layer " + std::to_string(i)).c_str());
    const LayerActivations a = activations(i);
    layer_recompute(context(), i, a, mode);
    layer_backward(context(), i, a, g);
  }
  embedding_backward(outside.get<std::int32_t>("tokens"), g.d_residual_a, parameters.grad(0), t, h, stream);
}

TrainStack::TrainStack(const ModelConfig& config, std::int64_t mbs, std::int64_t seq, Recompute mode,
                       AttentionChoice attention, cudaStream_t stream, std::uint64_t seed) {
  validate(config);
  if (mbs < 1 || seq < 1) throw std::invalid_argument("TrainStack: mbs and seq must be at least 1");
  state_ = std::make_unique<State>(config, mbs, seq, mode, attention, stream, seed);
}

TrainStack::~TrainStack() = default;

void TrainStack::set_batch(std::span<const std::int32_t> tokens, std::span<const std::int32_t> targets) {
  State& s = *state_;
  const auto count = static_cast<std::size_t>(s.tokens());
  if (tokens.size() != count || targets.size() != count)
    throw std::invalid_argument("TrainStack::set_batch: need " + std::to_string(count) + " tokens and targets");
  for (std::span<const std::int32_t> ids : {tokens, targets})
    for (std::int32_t id : ids)
      if (id < 0 || id >= s.config.vocab)
        throw std::invalid_argument("TrainStack::set_batch: token id " + std::to_string(id) + " outside the vocabulary");
  // On the stream, so the copies follow the previous micro-batch's reads
  // and precede the next kernels (a plain cudaMemcpy from pageable memory
  // may return before its DMA lands, and does not order with a
  // non-blocking stream); the wait frees the caller's spans.
  REDLINE_CUDA_CHECK(cudaMemcpyAsync(s.outside.at("tokens"), tokens.data(), tokens.size_bytes(), cudaMemcpyHostToDevice,
                                     s.stream));
  REDLINE_CUDA_CHECK(cudaMemcpyAsync(s.outside.at("targets"), targets.data(), targets.size_bytes(),
                                     cudaMemcpyHostToDevice, s.stream));
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(s.stream));
}

void TrainStack::set_batch_device(const std::int32_t* tokens, const std::int32_t* targets) {
  State& s = *state_;
  const auto bytes = static_cast<std::size_t>(s.tokens()) * sizeof(std::int32_t);
  REDLINE_CUDA_CHECK(cudaMemcpyAsync(s.outside.at("tokens"), tokens, bytes, cudaMemcpyDeviceToDevice, s.stream));
  REDLINE_CUDA_CHECK(cudaMemcpyAsync(s.outside.at("targets"), targets, bytes, cudaMemcpyDeviceToDevice, s.stream));
}

void TrainStack::set_gradient_accumulation(std::int64_t micro_batches) {
  if (micro_batches < 1) throw std::invalid_argument("TrainStack: gradient accumulation below 1 micro-batch");
  state_->accumulation = micro_batches;
}

void TrainStack::enqueue_forward_backward() {
  State& s = *state_;
  if (s.timed_micro_batches == s.micro_batch_timers.size()) s.micro_batch_timers.emplace_back();
  State::MicroBatchTimers& timers = s.micro_batch_timers[s.timed_micro_batches];
  timers.forward.start(s.stream);
  s.forward();
  timers.forward.stop(s.stream);
  timers.backward.start(s.stream);
  s.backward();
  timers.backward.stop(s.stream);
  ++s.timed_micro_batches;  // only once both pairs are recorded
}

float TrainStack::forward_backward() {
  enqueue_forward_backward();
  return last_loss();
}

float TrainStack::last_loss() const {
  const State& s = *state_;
  float value = 0;
  REDLINE_CUDA_CHECK(cudaMemcpyAsync(&value, s.loss.data(), sizeof value, cudaMemcpyDeviceToHost, s.stream));
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  return value;
}

void TrainStack::zero_grads() {
  state_->parameters.zero_grads(state_->stream);
  state_->timed_micro_batches = 0;  // a new accumulation: its timers are reused from the first
}

void TrainStack::optimizer_step(const AdamWSettings& settings) {
  State& s = *state_;
  const NvtxRange range("optimizer");
  s.optimizer_timer.start(s.stream);
  s.parameters.adamw_step(settings, s.stream);
  s.optimizer_timer.stop(s.stream);
  s.optimizer_timed = true;
}

std::int64_t TrainStack::optimizer_steps() const { return state_->parameters.steps(); }

PartsAlone TrainStack::time_parts_alone(const MeasurementPolicy& policy) {
  State& s = *state_;
  RecordedCalls gemm_calls, attention_calls;
  {
    struct StopRecording {  // however the micro-batch ends
      State& s;
      ~StopRecording() {
        s.gemms.record_into(nullptr);
        s.attention.record_into(nullptr);
      }
    } stop{s};
    s.gemms.record_into(&gemm_calls);
    s.attention.record_into(&attention_calls);
    s.forward();
    s.backward();
  }
  const NvtxRange range("parts alone");
  PartsAlone parts;
  parts.gemm_calls = static_cast<std::int64_t>(gemm_calls.size());
  parts.attention_calls = static_cast<std::int64_t>(attention_calls.size());
  parts.gemm_ms = time_each_alone(gemm_calls, policy, s.stream);
  parts.attention_ms = time_each_alone(attention_calls, policy, s.stream);
  return parts;
}

PhaseTimes TrainStack::last_phase_times() const {
  const State& s = *state_;
  PhaseTimes times;
  for (std::size_t i = 0; i < s.timed_micro_batches; ++i) {
    times.forward_ms += s.micro_batch_timers[i].forward.elapsed_seconds() * 1e3;
    times.backward_ms += s.micro_batch_timers[i].backward.elapsed_seconds() * 1e3;
  }
  times.micro_batches = static_cast<std::int64_t>(s.timed_micro_batches);
  if (s.optimizer_timed) times.optimizer_ms = s.optimizer_timer.elapsed_seconds() * 1e3;
  return times;
}

AllocatedBytes TrainStack::allocated() const {
  const State& s = *state_;
  AllocatedBytes bytes;
  bytes.state = s.parameters.bytes();
  bytes.activations = s.outside.bytes();
  for (const TensorArena& layer : s.saved) bytes.activations += layer.bytes();
  bytes.working = s.working.bytes();
  bytes.workspace = static_cast<std::int64_t>(s.gemms.workspace_bytes()) + s.attention.bytes();
  bytes.small = static_cast<std::int64_t>(s.loss.bytes());
  return bytes;
}

const std::vector<ParameterTensor>& TrainStack::tensors() const { return state_->parameters.tensors(); }
std::vector<float> TrainStack::master_weight(std::size_t index) const {
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(state_->stream));
  return state_->parameters.master_to_host(index);
}
std::vector<float> TrainStack::gradient(std::size_t index) const {
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(state_->stream));
  return state_->parameters.grad_to_host(index);
}
void TrainStack::load_weight(std::size_t index, std::span<const float> values) {
  state_->parameters.load_master(index, values, state_->stream);
}
const ModelConfig& TrainStack::config() const { return state_->config; }
std::int64_t TrainStack::tokens() const { return state_->tokens(); }

}  // namespace redline
