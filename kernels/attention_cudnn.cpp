// CudnnAttention: the cuDNN frontend graphs for one attention problem, built
// once (validate, operation graph, heuristic A plans, support check, plan
// build), executed on the caller's tensors through a UID variant pack. The
// only translation unit that includes cudnn_frontend.h (about 8 s to
// compile without its JSON library, which is not used here).
#include "kernels/attention_cudnn.cuh"

#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/attention_check.cuh"
#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"

#if defined(REDLINE_HAVE_CUDNN)
#include <cudnn.h>
#include <cudnn_frontend.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>
#endif

namespace redline {

const AttentionFp8Scales& attention_fp8_scales() {
  static const AttentionFp8Scales scales;
  return scales;
}

#if defined(REDLINE_HAVE_CUDNN)

namespace fe = cudnn_frontend;

namespace {

// Tensor UIDs of the variant packs. FP8 scalars (scales, descales, amaxes)
// live in one device array, each in a 16-byte slot of its own
// (scalar_index): cuDNN tensors declare 16-byte alignment by default and the
// backend trusts it without checking the pointer. The forward's P and
// the backward's recomputed P are different tensors (unnormalized there,
// normalized here) with scales of their own: kScaleS / kDescaleS in the
// forward, kScaleSBackward / kDescaleSBackward in the backward, each pair
// internal to its graph. What crosses graphs: O, written by the forward
// with kScaleO and read by the backward with kDescaleO.
constexpr std::int64_t kQ = 1, kK = 2, kV = 3, kO = 4, kStats = 5, kDO = 6, kDQ = 7, kDK = 8, kDV = 9;
constexpr std::int64_t kFirstScalar = 100;
constexpr std::int64_t kDescaleQ = kFirstScalar + 0,
                       kDescaleK = kFirstScalar + 1,
                       kDescaleV = kFirstScalar + 2,
                       kDescaleS = kFirstScalar + 3,
                       kScaleS = kFirstScalar + 4,
                       kScaleO = kFirstScalar + 5,
                       kAmaxS = kFirstScalar + 6,
                       kAmaxO = kFirstScalar + 7,
                       kDescaleO = kFirstScalar + 8,
                       kDescaleDO = kFirstScalar + 9,
                       kDescaleDP = kFirstScalar + 10,
                       kScaleDP = kFirstScalar + 11,
                       kScaleDQ = kFirstScalar + 12,
                       kScaleDK = kFirstScalar + 13,
                       kScaleDV = kFirstScalar + 14,
                       kAmaxDQ = kFirstScalar + 15,
                       kAmaxDK = kFirstScalar + 16,
                       kAmaxDV = kFirstScalar + 17,
                       kAmaxDP = kFirstScalar + 18,
                       kScaleSBackward = kFirstScalar + 19,
                       kDescaleSBackward = kFirstScalar + 20;
constexpr std::int64_t kEndScalar = kFirstScalar + 21;
constexpr std::size_t kScalarCount = kEndScalar - kFirstScalar;
constexpr std::size_t kSlotFloats = 4;  // 16 bytes
constexpr std::size_t kScalarFloats = kScalarCount * kSlotFloats;
// Where scalar `uid` lives in the array, in floats.
constexpr std::size_t scalar_index(std::int64_t uid) {
  return static_cast<std::size_t>(uid - kFirstScalar) * kSlotFloats;
}

using GraphPtr = std::shared_ptr<fe::graph::Graph>;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

// One cuDNN handle per (device, stream), created on first use. Kept until
// the process ends and never destroyed: destroying one after the CUDA
// context is torn down at exit can crash, and a handle costs far more to
// create than a case takes to run. The key is the stream's address, which
// CUDA may reuse for a later stream, so execute sets the handle's stream
// again before each run rather than trusting the one set here.
cudnnHandle_t handle_for(cudaStream_t stream) {
  static std::mutex mutex;
  static std::map<std::pair<int, cudaStream_t>, cudnnHandle_t> handles;
  int device = 0;
  REDLINE_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard lock(mutex);
  const auto key = std::make_pair(device, stream);
  if (const auto found = handles.find(key); found != handles.end()) return found->second;
  cudnnHandle_t handle = nullptr;
  if (const cudnnStatus_t status = cudnnCreate(&handle); status != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cudnnCreate failed: ") + cudnnGetErrorString(status));
  if (const cudnnStatus_t status = cudnnSetStream(handle, stream); status != CUDNN_STATUS_SUCCESS) {
    (void)cudnnDestroy(handle);
    throw std::runtime_error(std::string("cudnnSetStream failed: ") + cudnnGetErrorString(status));
  }
  handles.emplace(key, handle);
  return handle;
}

fe::DataType_t io_type(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::bf16: return fe::DataType_t::BFLOAT16;
    case GemmDtype::fp16: return fe::DataType_t::HALF;
    case GemmDtype::fp8_e4m3: return fe::DataType_t::FP8_E4M3;
    default:
      throw std::invalid_argument(std::string("cuDNN attention runs in bf16, fp16 or fp8_e4m3, not ") +
                                  gemm_dtype_info(dtype).name);
  }
}

GraphPtr new_graph(GemmDtype dtype) {
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(io_type(dtype))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return graph;
}

// The strides of a dense [batch, heads, seq, head_dim] tensor stored in
// `layout`: BHSD as the attention cases keep it, or BSHD, the token-major rows
// a projection GEMM writes ([b*s, heads*d]), which cuDNN reads in place.
std::vector<std::int64_t> strides(AttentionLayout layout, const AttentionShape& shape, std::int64_t heads) {
  const std::int64_t s = shape.seq, d = shape.head_dim;
  if (layout == AttentionLayout::bshd) return {s * heads * d, d, heads * d, 1};
  return {heads * s * d, s * d, d, 1};
}

// A dense tensor with `heads` heads in `layout`.
TensorPtr attention_tensor(fe::graph::Graph& graph, const char* name, std::int64_t uid, const AttentionShape& shape,
                           std::int64_t heads, AttentionLayout layout) {
  return graph.tensor(fe::graph::Tensor_attributes()
                          .set_name(name)
                          .set_uid(uid)
                          .set_dim({shape.batch, heads, shape.seq, shape.head_dim})
                          .set_stride(strides(layout, shape, heads)));
}

void as_attention_output(const TensorPtr& tensor, std::int64_t uid, const AttentionShape& shape, std::int64_t heads,
                         AttentionLayout layout) {
  tensor->set_output(true)
      .set_uid(uid)
      .set_dim({shape.batch, heads, shape.seq, shape.head_dim})
      .set_stride(strides(layout, shape, heads));
}

// The b x a_q x s fp32 log-sum-exp cuDNN calls stats (natural log).
void as_stats(const TensorPtr& tensor, const AttentionShape& shape) {
  const std::int64_t h = shape.heads, s = shape.seq;
  tensor->set_uid(kStats).set_dim({shape.batch, h, s, 1}).set_stride({h * s, s, 1, 1}).set_data_type(
      fe::DataType_t::FLOAT);
}

TensorPtr fp32_scalar(fe::graph::Graph& graph, std::int64_t uid) {
  return graph.tensor(fe::graph::Tensor_attributes()
                          .set_name("scalar_" + std::to_string(uid))
                          .set_uid(uid)
                          .set_dim({1, 1, 1, 1})
                          .set_stride({1, 1, 1, 1})
                          .set_data_type(fe::DataType_t::FLOAT));
}

void as_scalar_output(const TensorPtr& tensor, std::int64_t uid) {
  tensor->set_output(true).set_uid(uid).set_dim({1, 1, 1, 1}).set_stride({1, 1, 1, 1}).set_data_type(
      fe::DataType_t::FLOAT);
}

template <typename Attributes>
Attributes sdpa_options(const AttentionShape& shape, const char* name) {
  Attributes options;
  options.set_name(name).set_attn_scale(static_cast<float>(softmax_scale(shape)));
  if (shape.causal) options.set_causal_mask(true);  // top-left diagonal, right bound 0: column > row masked
  return options;
}

GraphPtr forward_graph(const AttentionShape& shape, GemmDtype dtype, AttentionLayout layout) {
  GraphPtr graph = new_graph(dtype);
  fe::graph::Graph& g = *graph;
  const TensorPtr q = attention_tensor(g, "Q", kQ, shape, shape.heads, layout);
  const TensorPtr k = attention_tensor(g, "K", kK, shape, shape.kv_heads, layout);
  const TensorPtr v = attention_tensor(g, "V", kV, shape, shape.kv_heads, layout);
  TensorPtr o, stats;
  if (dtype == GemmDtype::fp8_e4m3) {
    auto options = sdpa_options<fe::graph::SDPA_fp8_attributes>(shape, "sdpa_fp8").set_generate_stats(true);
    auto [out, lse, amax_s, amax_o] =
        g.sdpa_fp8(q, k, v, fp32_scalar(g, kDescaleQ), fp32_scalar(g, kDescaleK), fp32_scalar(g, kDescaleV),
                   fp32_scalar(g, kDescaleS), fp32_scalar(g, kScaleS), fp32_scalar(g, kScaleO), options);
    as_scalar_output(amax_s, kAmaxS);
    as_scalar_output(amax_o, kAmaxO);
    o = out, stats = lse;
  } else {
    auto options = sdpa_options<fe::graph::SDPA_attributes>(shape, "sdpa").set_generate_stats(true);
    auto [out, lse] = g.sdpa(q, k, v, options);
    o = out, stats = lse;
  }
  as_attention_output(o, kO, shape, shape.heads, layout);
  stats->set_output(true);
  as_stats(stats, shape);
  return graph;
}

// The FP8 backward's scalars, in the order sdpa_fp8_backward takes them
// (frontend 1.32, node/sdpa_fp8_bwd.h): descale Q, K, V (S = Q K^T), O and
// dO (rowsum(dO O)), S (P^T dO -> dV: P's own scale below), dP (dS K -> dQ,
// dS^T Q -> dK); scale S (the recomputed P = exp(S - LSE), cast to e4m3),
// dQ, dK, dV (the outputs), dP (dS, cast to e4m3).
std::array<TensorPtr, 12> fp8_backward_scalars(fe::graph::Graph& g) {
  return {fp32_scalar(g, kDescaleQ),  fp32_scalar(g, kDescaleK),       fp32_scalar(g, kDescaleV),
          fp32_scalar(g, kDescaleO),  fp32_scalar(g, kDescaleDO),      fp32_scalar(g, kDescaleSBackward),
          fp32_scalar(g, kDescaleDP), fp32_scalar(g, kScaleSBackward), fp32_scalar(g, kScaleDQ),
          fp32_scalar(g, kScaleDK),   fp32_scalar(g, kScaleDV),        fp32_scalar(g, kScaleDP)};
}

GraphPtr backward_graph(const AttentionShape& shape, GemmDtype dtype, AttentionLayout layout) {
  GraphPtr graph = new_graph(dtype);
  fe::graph::Graph& g = *graph;
  const TensorPtr q = attention_tensor(g, "Q", kQ, shape, shape.heads, layout);
  const TensorPtr k = attention_tensor(g, "K", kK, shape, shape.kv_heads, layout);
  const TensorPtr v = attention_tensor(g, "V", kV, shape, shape.kv_heads, layout);
  const TensorPtr o = attention_tensor(g, "O", kO, shape, shape.heads, layout);
  const TensorPtr d_o = attention_tensor(g, "dO", kDO, shape, shape.heads, layout);
  const TensorPtr stats = g.tensor(fe::graph::Tensor_attributes().set_name("Stats"));
  as_stats(stats, shape);
  TensorPtr dq, dk, dv;
  if (dtype == GemmDtype::fp8_e4m3) {
    const auto sc = fp8_backward_scalars(g);
    auto options = sdpa_options<fe::graph::SDPA_fp8_backward_attributes>(shape, "sdpa_fp8_backward");
    auto [gq, gk, gv, amax_dq, amax_dk, amax_dv, amax_dp] =
        g.sdpa_fp8_backward(q, k, v, o, d_o, stats, sc[0], sc[1], sc[2], sc[3], sc[4], sc[5], sc[6], sc[7], sc[8],
                            sc[9], sc[10], sc[11], options);
    as_scalar_output(amax_dq, kAmaxDQ);
    as_scalar_output(amax_dk, kAmaxDK);
    as_scalar_output(amax_dv, kAmaxDV);
    as_scalar_output(amax_dp, kAmaxDP);
    dq = gq, dk = gk, dv = gv;
  } else {
    auto options = sdpa_options<fe::graph::SDPA_backward_attributes>(shape, "sdpa_backward");
    auto [gq, gk, gv] = g.sdpa_backward(q, k, v, o, d_o, stats, options);
    dq = gq, dk = gk, dv = gv;
  }
  as_attention_output(dq, kDQ, shape, shape.heads, layout);
  as_attention_output(dk, kDK, shape, shape.kv_heads, layout);
  as_attention_output(dv, kDV, shape, shape.kv_heads, layout);
  return graph;
}

// The frontend's steps from a described graph to runnable plans; the first
// that fails names itself and cuDNN's message. nullopt when all pass.
std::optional<std::string> build_plans(fe::graph::Graph& graph, cudnnHandle_t handle) {
  const auto failed = [](const char* step, fe::error_t status) -> std::optional<std::string> {
    if (status.is_good()) return std::nullopt;
    return std::string("cuDNN ") + step + ": " + status.get_message();
  };
  if (auto why = failed("validate", graph.validate())) return why;
  if (auto why = failed("build_operation_graph", graph.build_operation_graph(handle))) return why;
  if (auto why = failed("create_execution_plans", graph.create_execution_plans({fe::HeurMode_t::A}))) return why;
  if (auto why = failed("check_support", graph.check_support(handle))) return why;
  return failed("build_plans", graph.build_plans(handle));
}

// The scalar array's contents for `f`: each tensor a graph writes gets
// f's scale, each it reads 1 / f's scale (the scale it was written with:
// O's by the forward, P's and dS's inside their own graph); amaxes zero
// until cuDNN writes them.
std::array<float, kScalarFloats> scalar_values(const AttentionFp8Scales& f) {
  std::array<float, kScalarFloats> values{};
  const auto set = [&values](std::int64_t uid, float value) { values[scalar_index(uid)] = value; };
  set(kDescaleQ, 1 / f.q), set(kDescaleK, 1 / f.k), set(kDescaleV, 1 / f.v), set(kDescaleDO, 1 / f.d_o);
  set(kScaleS, f.s), set(kDescaleS, 1 / f.s);
  set(kScaleO, f.o), set(kDescaleO, 1 / f.o);
  set(kScaleSBackward, f.s_backward), set(kDescaleSBackward, 1 / f.s_backward);
  set(kScaleDP, f.dp), set(kDescaleDP, 1 / f.dp);
  set(kScaleDQ, f.dq), set(kScaleDK, f.dk), set(kScaleDV, f.dv);
  return values;
}

// 2^floor(log2(448 / (2 amax))): the largest power of two that keeps
// amax at or below half of e4m3's largest value. `scale` unchanged when
// amax is 0 (nothing measured, or everything underflowed) or not finite.
float fitted_scale(float scale, float amax) {
  if (!(amax > 0) || !std::isfinite(amax)) return scale;
  const int exponent = std::clamp(static_cast<int>(std::floor(std::log2(448.0 / (2.0 * amax)))), -100, 100);
  return std::ldexp(1.0f, exponent);
}

// An upper bound on the backward's recomputed P = exp(S_ij - LSE_i), S =
// Q K^T / sqrt(d), over every row and key, for which the graph reports no
// amax: by Cauchy-Schwarz S_ij <= |q_i| max_j |k_j| / sqrt(d) (max over
// the row's KV head; the mask only removes keys), and P <= 1 as it is
// normalized. Read from the device (Q, K in chunks of whole rows, the fp32
// LSE), after the forward wrote the LSE; synchronous.
float backward_p_bound(const AttentionShape& shape, const AttentionTensors& t, const AttentionFp8Scales& f) {
  const std::int64_t s = shape.seq, d = shape.head_dim, group = shape.heads / shape.kv_heads;
  const std::int64_t rows_per_chunk = std::max<std::int64_t>(1, (std::int64_t{1} << 22) / d);
  // The norm of each of `rows` rows of `data` (e4m3, stored with `scale`), a chunk at a time.
  const auto for_each_row_norm = [&](const void* data, std::int64_t rows, float scale, auto&& use) {
    for (std::int64_t first = 0; first < rows; first += rows_per_chunk) {
      const std::int64_t n = std::min(rows_per_chunk, rows - first);
      const std::vector<double> values =
          attention_tensor_to_host(static_cast<const std::byte*>(data) + first * d, n * d, GemmDtype::fp8_e4m3, scale);
      for (std::int64_t r = 0; r < n; ++r) {
        double sum = 0;
        for (std::int64_t i = 0; i < d; ++i) sum += values[r * d + i] * values[r * d + i];
        use(first + r, std::sqrt(sum));
      }
    }
  };
  std::vector<double> k_max(static_cast<std::size_t>(shape.batch * shape.kv_heads), 0.0);
  for_each_row_norm(t.k, shape.batch * shape.kv_heads * s, f.k, [&](std::int64_t row, double norm) {
    double& m = k_max[static_cast<std::size_t>(row / s)];
    m = std::max(m, norm);
  });
  std::vector<float> lse(static_cast<std::size_t>(shape.batch * shape.heads * s));
  REDLINE_CUDA_CHECK(cudaMemcpy(lse.data(), t.lse, lse.size() * sizeof(float), cudaMemcpyDeviceToHost));
  const double attn_scale = softmax_scale(shape);
  double worst = -std::numeric_limits<double>::infinity();
  for_each_row_norm(t.q, shape.batch * shape.heads * s, f.q, [&](std::int64_t row, double norm) {
    const std::int64_t head = (row / s) % shape.heads, batch = row / (s * shape.heads);
    const double k = k_max[static_cast<std::size_t>(batch * shape.kv_heads + head / group)];
    worst = std::max(worst, attn_scale * norm * k - static_cast<double>(lse[static_cast<std::size_t>(row)]));
  });
  const double bound = std::exp(worst);
  return std::isfinite(bound) ? static_cast<float>(std::min(1.0, bound)) : 1.0f;
}

}  // namespace

struct CudnnAttention::State {
  AttentionShape shape;
  GemmDtype dtype = GemmDtype::bf16;
  AttentionLayout layout = AttentionLayout::bhsd;
  cudaStream_t stream = nullptr;
  cudnnHandle_t handle = nullptr;
  GraphPtr forward, backward;
  std::string unsupported;
  DeviceBuffer<std::byte> workspace;
  DeviceBuffer<float> scalars;  // FP8 only: index uid - kFirstScalar
  AttentionFp8Scales scales;    // what scalars holds (the defaults until calibrate_fp8)
  std::array<float, kScalarFloats> host_scalars{};  // scalar_values(scales), the upload's source

  void build(bool with_backward);
  void allocate();
  void upload_scalars();
  void execute(const fe::graph::Graph& graph, std::unordered_map<std::int64_t, void*> pack, const char* what) const;
};

// Each graph built and checked in turn; the first refusal is the reason.
// The frontend reports through error_t, but a few of its paths throw.
void CudnnAttention::State::build(bool with_backward) {
  try {
    forward = forward_graph(shape, dtype, layout);
    if (auto why = build_plans(*forward, handle)) {
      unsupported = "forward: " + *why;
      return;
    }
    if (!with_backward) return;
    backward = backward_graph(shape, dtype, layout);
    if (auto why = build_plans(*backward, handle)) unsupported = "backward: " + *why;
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    unsupported = std::string("cuDNN frontend: ") + e.what();
  }
}

void CudnnAttention::State::allocate() {
  std::int64_t bytes = 0, backward_bytes = 0;
  if (!forward->get_workspace_size(bytes).is_good() ||
      (backward && !backward->get_workspace_size(backward_bytes).is_good())) {
    unsupported = "cuDNN get_workspace_size failed";
    return;
  }
  workspace = DeviceBuffer<std::byte>(static_cast<std::size_t>(std::max(bytes, backward_bytes)));
  if (dtype != GemmDtype::fp8_e4m3) return;
  scalars = DeviceBuffer<float>(kScalarFloats);
  upload_scalars();
}

// `scales` to the device (amaxes zeroed). The work runs on `stream`
// (non-blocking in the tools): the copy is enqueued there, behind whatever
// the stream already runs, and waited for, so host_scalars may change as
// soon as this returns.
void CudnnAttention::State::upload_scalars() {
  host_scalars = scalar_values(scales);
  REDLINE_CUDA_CHECK(cudaMemcpyAsync(scalars.data(), host_scalars.data(), scalars.bytes(), cudaMemcpyHostToDevice,
                                     stream));
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void CudnnAttention::State::execute(const fe::graph::Graph& graph, std::unordered_map<std::int64_t, void*> pack,
                                    const char* what) const {
  if (dtype == GemmDtype::fp8_e4m3)
    for (std::int64_t uid = kFirstScalar; uid < kEndScalar; ++uid) pack[uid] = scalars.data() + scalar_index(uid);
  if (const cudnnStatus_t set = cudnnSetStream(handle, stream); set != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cudnnSetStream before the ") + what + ": " + cudnnGetErrorString(set));
  fe::error_t status = graph.execute(handle, pack, workspace.data());
  if (!status.is_good()) throw std::runtime_error(std::string("cuDNN ") + what + " execute: " + status.get_message());
}

CudnnAttention::CudnnAttention(const AttentionShape& shape, GemmDtype dtype, bool with_backward,
                               cudaStream_t stream, AttentionLayout layout)
    : state_(std::make_unique<State>()) {
  validate(shape);
  State& s = *state_;
  s.shape = shape;
  s.dtype = dtype;
  s.layout = layout;
  s.stream = stream;
  (void)io_type(dtype);  // an unknown dtype is the caller's error, not cuDNN's refusal
  s.handle = handle_for(stream);
  if (dtype == GemmDtype::fp8_e4m3 && layout != AttentionLayout::bhsd) {
    // calibrate_fp8's bound on the backward's P reads Q, K and the LSE as BHSD.
    s.unsupported = "FP8 is planned for BHSD tensors only";
    return;
  }
  s.build(with_backward);
  if (s.unsupported.empty()) s.allocate();
}

void CudnnAttention::forward(const AttentionTensors& t) const {
  const State& s = *state_;
  if (!s.unsupported.empty()) throw std::logic_error("CudnnAttention::forward: unsupported: " + s.unsupported);
  s.execute(*s.forward, {{kQ, t.q}, {kK, t.k}, {kV, t.v}, {kO, t.o}, {kStats, t.lse}}, "forward");
}

void CudnnAttention::backward(const AttentionTensors& t) const {
  const State& s = *state_;
  if (!s.unsupported.empty()) throw std::logic_error("CudnnAttention::backward: unsupported: " + s.unsupported);
  if (!s.backward) throw std::logic_error("CudnnAttention::backward: planned without the backward");
  s.execute(*s.backward,
            {{kQ, t.q}, {kK, t.k}, {kV, t.v}, {kO, t.o}, {kStats, t.lse}, {kDO, t.d_o}, {kDQ, t.dq}, {kDK, t.dk},
             {kDV, t.dv}},
            "backward");
}

AttentionFp8Amax CudnnAttention::fp8_amax() const {
  const State& s = *state_;
  if (s.scalars.empty()) return {};
  std::array<float, kScalarFloats> values{};
  REDLINE_CUDA_CHECK(
      cudaMemcpyAsync(values.data(), s.scalars.data(), s.scalars.bytes(), cudaMemcpyDeviceToHost, s.stream));
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  const auto at = [&values](std::int64_t uid) { return values[scalar_index(uid)]; };
  return {at(kAmaxS), at(kAmaxO), at(kAmaxDQ), at(kAmaxDK), at(kAmaxDV), at(kAmaxDP)};
}

void CudnnAttention::calibrate_fp8(const AttentionTensors& t) {
  State& s = *state_;
  if (!s.unsupported.empty()) throw std::logic_error("CudnnAttention::calibrate_fp8: unsupported: " + s.unsupported);
  if (s.dtype != GemmDtype::fp8_e4m3) return;
  AttentionFp8Scales& f = s.scales;
  // The forward: O, then O (and the LSE) written again with the scale the
  // backward's descale_O will say. P keeps its scale: the fused kernel casts
  // the unnormalized exp(S - running max), which reaches 1 in every row,
  // while the graph's amax_s is that of the normalized softmax (about 1/s
  // without a mask). Fitting scale_S to amax_s saturated P: O was off by
  // 88-99% on an H200 for every non-causal shape.
  forward(t);
  AttentionFp8Amax amax = fp8_amax();
  f.o = fitted_scale(f.o, amax.o);
  s.upload_scalars();
  forward(t);
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  if (!s.backward) return;
  // The backward's P from its bound (the LSE is fp32, unaffected by scales).
  f.s_backward = fitted_scale(f.s_backward, backward_p_bound(s.shape, t, f));
  s.upload_scalars();
  // dS's amax is measured before its cast, so the first run fits it (and
  // dV, which reads P and dO only); dQ and dK are GEMMs of the cast dS, so
  // their amaxes mean something only once dS no longer underflows: the
  // second run fits them.
  for (int run = 0; run < 2; ++run) {
    backward(t);
    amax = fp8_amax();
    f.dp = fitted_scale(f.dp, amax.dp);
    f.dv = fitted_scale(f.dv, amax.dv);
    f.dq = fitted_scale(f.dq, amax.dq);
    f.dk = fitted_scale(f.dk, amax.dk);
    s.upload_scalars();
  }
  // Both graphs again with the final scales: O, dQ, dK and dV written with
  // them, and every amax (each upload zeroes them all, and the backward
  // writes none of the forward's) describing this run.
  forward(t);
  backward(t);
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(s.stream));
}

AttentionFp8Scales CudnnAttention::fp8_scales() const { return state_->scales; }

std::string CudnnAttention::version() {
  // cuDNN 9: 10000 * major + 100 * minor + patch.
  const std::size_t v = cudnnGetVersion();
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100) +
         " (frontend " + std::to_string(CUDNN_FRONTEND_MAJOR_VERSION) + "." +
         std::to_string(CUDNN_FRONTEND_MINOR_VERSION) + "." + std::to_string(CUDNN_FRONTEND_PATCH_VERSION) + ")";
}

#else  // !REDLINE_HAVE_CUDNN

// Without cuDNN every object is unsupported and says why.
struct CudnnAttention::State {
  std::string unsupported =
      "built without cuDNN (cudnn.h, libcudnn or the cudnn-frontend headers not found at configure time)";
  DeviceBuffer<std::byte> workspace;
};

CudnnAttention::CudnnAttention(const AttentionShape& shape, GemmDtype dtype, bool, cudaStream_t, AttentionLayout)
    : state_(std::make_unique<State>()) {
  validate(shape);
  (void)attention_element_bytes(dtype);
}
void CudnnAttention::forward(const AttentionTensors&) const {
  throw std::logic_error("CudnnAttention::forward: unsupported: " + state_->unsupported);
}
void CudnnAttention::backward(const AttentionTensors&) const {
  throw std::logic_error("CudnnAttention::backward: unsupported: " + state_->unsupported);
}
AttentionFp8Amax CudnnAttention::fp8_amax() const { return {}; }
void CudnnAttention::calibrate_fp8(const AttentionTensors&) {
  throw std::logic_error("CudnnAttention::calibrate_fp8: unsupported: " + state_->unsupported);
}
AttentionFp8Scales CudnnAttention::fp8_scales() const { return attention_fp8_scales(); }
std::string CudnnAttention::version() { return ""; }

#endif  // REDLINE_HAVE_CUDNN

CudnnAttention::~CudnnAttention() = default;
bool CudnnAttention::supported() const { return state_->unsupported.empty(); }
const std::string& CudnnAttention::unsupported_reason() const { return state_->unsupported; }
std::size_t CudnnAttention::workspace_bytes() const { return state_->workspace.bytes(); }

}  // namespace redline
