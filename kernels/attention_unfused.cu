// UnfusedAttention: six batched cuBLASLt GEMMs over the KV groups (see the
// header) and two row kernels, written for clarity over speed: one block
// per row, fp32 arithmetic, warp-shuffle reductions. The row kernels are
// memory-bound either way; the GEMMs are what the tile model explains.
#include "kernels/attention_unfused.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"

namespace redline {

namespace {

constexpr int kRowThreads = 256;

__device__ inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float to_float(__half x) { return __half2float(x); }
template <typename T>
__device__ inline T from_float(float x);
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16(x); }
template <>
__device__ inline __half from_float<__half>(float x) { return __float2half(x); }

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// Every thread of the block gets the reduction of `value` over the block.
// `shared` holds one partial per warp; the leading barrier keeps a second
// reduction from overwriting partials a slow warp is still reading.
template <typename Op>
__device__ float block_reduce(float value, Op op, float identity, float* shared) {
  for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  __syncthreads();
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  value = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : identity;
  for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// One block per query row (rows in BHSD order, so the row's position in its
// sequence is row % s). Scores past `last` are masked: they become P = 0
// and do not enter the statistics. LSE = max + log(sum exp(x - max)).
template <typename T>
__global__ void softmax_rows(T* scores, float* lse, std::int64_t s_len, bool causal) {
  __shared__ float shared[32];
  const std::int64_t row = blockIdx.x;
  T* x = scores + row * s_len;
  const std::int64_t last = causal ? row % s_len : s_len - 1;
  float max_value = -INFINITY;
  for (std::int64_t j = threadIdx.x; j <= last; j += blockDim.x) max_value = fmaxf(max_value, to_float(x[j]));
  max_value = block_reduce(max_value, MaxOp{}, -INFINITY, shared);
  float sum = 0.0f;
  for (std::int64_t j = threadIdx.x; j <= last; j += blockDim.x) sum += expf(to_float(x[j]) - max_value);
  sum = block_reduce(sum, SumOp{}, 0.0f, shared);
  const float inverse = 1.0f / sum;
  for (std::int64_t j = threadIdx.x; j < s_len; j += blockDim.x)
    x[j] = from_float<T>(j <= last ? expf(to_float(x[j]) - max_value) * inverse : 0.0f);
  if (threadIdx.x == 0) lse[row] = max_value + logf(sum);
}

// dS = scale * P o (dP - D), D = rowsum(dO o O) (equal to rowsum(P o dP),
// and cheaper: d elements instead of s). Overwrites dP. Masked scores have
// P = 0, so their dS is 0 without a mask here.
template <typename T>
__global__ void softmax_grad_rows(const T* p, T* grad, const T* o, const T* d_o, std::int64_t s_len,
                                  std::int64_t d_len, float scale) {
  __shared__ float shared[32];
  const std::int64_t row = blockIdx.x;
  float dot = 0.0f;
  for (std::int64_t i = threadIdx.x; i < d_len; i += blockDim.x)
    dot += to_float(o[row * d_len + i]) * to_float(d_o[row * d_len + i]);
  dot = block_reduce(dot, SumOp{}, 0.0f, shared);
  for (std::int64_t j = threadIdx.x; j < s_len; j += blockDim.x) {
    const std::int64_t at = row * s_len + j;
    grad[at] = from_float<T>(to_float(p[at]) * (to_float(grad[at]) - dot) * scale);
  }
}

MatmulElement element_of(GemmDtype dtype) {
  if (dtype == GemmDtype::bf16) return MatmulElement::bf16;
  if (dtype == GemmDtype::fp16) return MatmulElement::fp16;
  throw std::invalid_argument(std::string("unfused attention runs in bf16 or fp16, not ") +
                              gemm_dtype_info(dtype).name);
}

// One of the model's GEMMs (harness/attention/attention_model.hpp, which
// owns the shapes) as a row-major cuBLASLt problem: C (m x n) = alpha op(A)
// op(B), batched over the KV groups, every operand dense per group.
UnfusedGemm planned(const char* name, const AttentionGemm& shape, bool backward, bool ta, bool tb,
                    MatmulElement element, float alpha = 1.0f) {
  StridedMatmul p;
  p.m = shape.m, p.n = shape.n, p.k = shape.k, p.transpose_a = ta, p.transpose_b = tb, p.batch = shape.batch;
  p.stride_a = shape.m * shape.k, p.stride_b = shape.k * shape.n, p.stride_c = shape.m * shape.n;
  p.inputs = element, p.output = element, p.alpha = alpha;
  return {name, p, backward};
}

}  // namespace

std::vector<UnfusedGemm> unfused_attention_gemms(const AttentionShape& shape, GemmDtype dtype) {
  const MatmulElement e = element_of(dtype);
  const auto fwd = unfused_gemms(shape, AttentionDirection::forward);
  const auto bwd = unfused_gemms(shape, AttentionDirection::backward);
  const auto scale = static_cast<float>(softmax_scale(shape));
  // Per group Q, O, dO, dQ are g*s x d; K, V, dK, dV s x d; S, P, dP, dS g*s x s.
  return {planned("scores", fwd[0], false, false, true, e, scale),  // Q K^T
          planned("output", fwd[1], false, false, false, e),        // P V
          planned("grad_v", bwd[0], true, true, false, e),          // P^T dO
          planned("grad_p", bwd[1], true, false, true, e),          // dO V^T
          planned("grad_q", bwd[2], true, false, false, e),         // dS K
          planned("grad_k", bwd[3], true, true, false, e)};         // dS^T Q
}

std::size_t unfused_attention_workspace_bytes(const AttentionShape& shape, GemmDtype dtype, bool with_backward) {
  validate(shape);
  (void)element_of(dtype);
  const auto scores = static_cast<std::size_t>(shape.batch * shape.heads) * static_cast<std::size_t>(shape.seq) *
                      static_cast<std::size_t>(shape.seq) * 2;
  return with_backward ? 2 * scores : scores;
}

struct UnfusedAttention::State {
  AttentionShape shape;
  GemmDtype dtype = GemmDtype::bf16;
  cudaStream_t stream = nullptr;
  std::vector<UnfusedGemm> gemms;
  std::vector<LtMatmul> plans;  // gemms' order; the backward four only with the backward
  DeviceBuffer<std::byte> scores, grad_scores;  // S then P; dP then dS

  std::int64_t rows() const { return shape.batch * shape.heads * shape.seq; }
  template <typename T>
  void enqueue_softmax(const AttentionTensors& t) const;
  template <typename T>
  void enqueue_softmax_grad(const AttentionTensors& t) const;
};

template <typename T>
void UnfusedAttention::State::enqueue_softmax(const AttentionTensors& t) const {
  softmax_rows<T><<<static_cast<unsigned>(rows()), kRowThreads, 0, stream>>>(reinterpret_cast<T*>(scores.data()), t.lse,
                                                                          shape.seq, shape.causal);
  REDLINE_CUDA_CHECK_LAST();
}

template <typename T>
void UnfusedAttention::State::enqueue_softmax_grad(const AttentionTensors& t) const {
  softmax_grad_rows<T><<<static_cast<unsigned>(rows()), kRowThreads, 0, stream>>>(
      reinterpret_cast<const T*>(scores.data()), reinterpret_cast<T*>(grad_scores.data()), static_cast<const T*>(t.o),
      static_cast<const T*>(t.d_o), shape.seq, shape.head_dim, static_cast<float>(softmax_scale(shape)));
  REDLINE_CUDA_CHECK_LAST();
}

UnfusedAttention::UnfusedAttention(const AttentionShape& shape, GemmDtype dtype, bool with_backward,
                                   cudaStream_t stream, LtWorkspace shared_workspace)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.shape = shape;
  s.dtype = dtype;
  s.stream = stream;
  s.gemms = unfused_attention_gemms(shape, dtype);
  if (s.rows() > INT32_MAX) throw std::invalid_argument("UnfusedAttention: b * a_q * s exceeds the grid's rows");
  for (const UnfusedGemm& g : s.gemms)
    if (with_backward || !g.backward) {
      if (shared_workspace.data != nullptr) s.plans.emplace_back(g.problem, shared_workspace);
      else s.plans.emplace_back(g.problem);
    }
  const std::size_t score_bytes = unfused_attention_workspace_bytes(shape, dtype, false);
  s.scores = DeviceBuffer<std::byte>(score_bytes);
  if (with_backward) s.grad_scores = DeviceBuffer<std::byte>(score_bytes);
}

UnfusedAttention::~UnfusedAttention() = default;

void UnfusedAttention::forward(const AttentionTensors& t) const {
  const State& s = *state_;
  enqueue_gemm(0, t);
  if (s.dtype == GemmDtype::bf16) s.enqueue_softmax<__nv_bfloat16>(t);
  else s.enqueue_softmax<__half>(t);
  enqueue_gemm(1, t);
}

void UnfusedAttention::backward(const AttentionTensors& t) const {
  const State& s = *state_;
  if (s.plans.size() < 6) throw std::logic_error("UnfusedAttention::backward: planned without the backward");
  enqueue_gemm(2, t);
  enqueue_gemm(3, t);
  if (s.dtype == GemmDtype::bf16) s.enqueue_softmax_grad<__nv_bfloat16>(t);
  else s.enqueue_softmax_grad<__half>(t);
  enqueue_gemm(4, t);
  enqueue_gemm(5, t);
}

// Where each GEMM of unfused_attention_gemms' list reads and writes: S/P in
// `scores`, dP/dS in `grad_scores`.
UnfusedAttention::Operands UnfusedAttention::gemm_operands(std::size_t index, const AttentionTensors& t) const {
  const State& s = *state_;
  void* scores = s.scores.data();
  void* grad_scores = s.grad_scores.data();
  switch (index) {
    case 0: return {t.q, t.k, scores};          // S = scale Q K^T
    case 1: return {scores, t.v, t.o};          // O = P V
    case 2: return {scores, t.d_o, t.dv};       // dV = P^T dO
    case 3: return {t.d_o, t.v, grad_scores};   // dP = dO V^T
    case 4: return {grad_scores, t.k, t.dq};    // dQ = dS K
    case 5: return {grad_scores, t.q, t.dk};    // dK = dS^T Q
  }
  throw std::out_of_range("UnfusedAttention: no GEMM " + std::to_string(index));
}

void UnfusedAttention::enqueue_gemm(std::size_t index, const AttentionTensors& t) const {
  const Operands operands = gemm_operands(index, t);
  gemm_plan(index).enqueue(operands.a, operands.b, operands.c, state_->stream);
}

const LtMatmul& UnfusedAttention::gemm_plan(std::size_t index) const {
  if (index >= state_->plans.size())
    throw std::out_of_range("UnfusedAttention: GEMM " + std::to_string(index) + " is not planned");
  return state_->plans[index];
}

const std::vector<UnfusedGemm>& UnfusedAttention::gemms() const { return state_->gemms; }

std::size_t UnfusedAttention::workspace_bytes() const { return state_->scores.bytes() + state_->grad_scores.bytes(); }

}  // namespace redline
