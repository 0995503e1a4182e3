// LtGemm: cuBLASLt descriptors for one GEMM shape, its heuristic candidates,
// the rotating buffer sets it runs on, and verify() against
// compare_with_reference. Everything cuBLASLt hands out is owned RAII, so a
// point that throws (unsupported, out of memory) leaks nothing.
#include "kernels/gemm_lt.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/core/units.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"
#include "kernels/device_query.cuh"
#include "kernels/gemm_reference.cuh"
#include "kernels/random_fill.cuh"

#if defined(REDLINE_HAVE_CUBLASLT)
#include <cublasLt.h>

#include "kernels/lt_objects.cuh"
#endif

namespace redline {

GemmCheck gemm_check(GemmDtype dtype, const ReferenceDifference& difference) {
  GemmCheck check;
  check.relative_error = difference.relative_error();
  check.nonfinite = difference.nonfinite;
  check.tolerance = gemm_dtype_info(dtype).tolerance;
  return check;
}

CaseCheck GemmCheck::case_check(const std::string& what) const {
  if (passed()) return CaseCheck::pass();
  return CaseCheck::fail((what.empty() ? "" : what + ": ") + "relative error " + format_number(relative_error, 3) +
                             " (tolerance " + format_number(tolerance, 3) + "), " + std::to_string(nonfinite) +
                             " non-finite",
                         static_cast<double>(nonfinite), {{"rel_error", relative_error}});
}

#if defined(REDLINE_HAVE_CUBLASLT)

namespace {

// Not 1: a scale that cuBLASLt ignored would go unnoticed with 1. Powers of
// two, so scale_a * scale_b is exact and the reference applies the same
// product cuBLASLt does.
constexpr float kFp8ScaleA = 0.5f;
constexpr float kFp8ScaleB = 0.25f;

struct LtTypes {
  cublasComputeType_t compute;
  cudaDataType_t a, b, c;
};

LtTypes lt_types(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::fp32: return {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F};
    case GemmDtype::tf32: return {CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F};
    case GemmDtype::fp16: return {CUBLAS_COMPUTE_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F};
    case GemmDtype::bf16: return {CUBLAS_COMPUTE_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF};
    case GemmDtype::fp8_e4m3: return {CUBLAS_COMPUTE_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF};
    case GemmDtype::fp8_e4m3_e5m2: return {CUBLAS_COMPUTE_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, CUDA_R_16BF};
  }
  throw std::invalid_argument("LtGemm: unknown dtype");
}

bool is_fp8(GemmDtype dtype) { return dtype == GemmDtype::fp8_e4m3 || dtype == GemmDtype::fp8_e4m3_e5m2; }

std::string shape_text(const GemmOptions& options, std::int64_t m, std::int64_t n, std::int64_t k) {
  return std::string(gemm_dtype_info(options.dtype).name) + " " + gemm_layout_name(options.layout) +
         " m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
         (options.batch > 1 ? " batch=" + std::to_string(options.batch) : std::string());
}

template <typename T>
void fill(void* data, std::size_t count, std::uint64_t seed, cudaStream_t stream) {
  random_fill(static_cast<T*>(data), count, seed, -1.0, 1.0, stream);
}

// Fills `count` elements stored as cuBLASLt type `type`.
void fill_as(cudaDataType_t type, void* data, std::size_t count, std::uint64_t seed, cudaStream_t stream) {
  switch (type) {
    case CUDA_R_32F: return fill<float>(data, count, seed, stream);
    case CUDA_R_16F: return fill<__half>(data, count, seed, stream);
    case CUDA_R_16BF: return fill<__nv_bfloat16>(data, count, seed, stream);
    case CUDA_R_8F_E4M3: return fill<__nv_fp8_e4m3>(data, count, seed, stream);
    case CUDA_R_8F_E5M2: return fill<__nv_fp8_e5m2>(data, count, seed, stream);
    default: throw std::invalid_argument("LtGemm: no random fill for this element type");
  }
}

struct BufferSet {
  DeviceBuffer<std::byte> a, b, c;
};

// Named wrapper: nvcc 13.0's front end crashes (internal error in
// find_allocated_name_reference) instantiating std::vector over the
// anonymous typedef'd struct itself.
struct Candidate {
  cublasLtMatmulHeuristicResult_t result;
};

}  // namespace

struct LtGemm::State {
  std::int64_t m = 0, n = 0, k = 0;
  GemmOptions options;
  cudaStream_t stream = nullptr;
  LtTypes types{};

  LtHandle handle;
  LtMatmulDesc matmul;
  LtLayout a_layout, b_layout, c_layout;  // D shares C's layout
  DeviceBuffer<float> scales;             // fp8 only: scale_a at [0], scale_b at [4]

  std::vector<Candidate> candidates;
  int selected = 0;
  GemmAlgorithm algorithm;
  DeviceBuffer<std::byte> workspace;  // the largest any candidate asks for

  std::size_t bytes_per_set = 0;
  std::vector<BufferSet> sets;

  std::uint64_t seed_for(std::size_t set, int operand) const {
    // random_fill mixes its seed, so distinct values give unrelated inputs.
    // Hashing, not seed + offset: seeds 1 and 2 must not share operands.
    return splitmix64(options.seed) ^ splitmix64(set * 4 + operand + 1);
  }

  // The constructor's steps, in order.
  void describe_problem();
  void set_fp8_scales();
  void find_candidates();
  void allocate_buffer_sets();
};

// Descriptors: the matmul (compute type, transposes) and the stored layouts
// of A, B and C (column-major rows and columns as stored), each repeated
// over the strided batch.
void LtGemm::State::describe_problem() {
  const LeadingDims ld = leading_dims(options.layout, m, n, k);
  const bool a_transposed = options.layout == GemmLayout::tn, b_transposed = options.layout == GemmLayout::nt;
  REDLINE_CUBLAS_CHECK(cublasLtCreate(handle.out()));
  REDLINE_CUBLAS_CHECK(cublasLtMatmulDescCreate(matmul.out(), types.compute, CUDA_R_32F));
  const cublasOperation_t transa = a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t transb = b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  REDLINE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(matmul.get(), CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  REDLINE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(matmul.get(), CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  const auto stored = [](LtLayout& layout, cudaDataType_t type, std::int64_t rows, std::int64_t cols,
                         std::int64_t leading) {
    REDLINE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(layout.out(), type, static_cast<std::uint64_t>(rows),
                                                    static_cast<std::uint64_t>(cols), leading));
  };
  stored(a_layout, types.a, a_transposed ? k : m, a_transposed ? m : k, ld.lda);
  stored(b_layout, types.b, b_transposed ? n : k, b_transposed ? k : n, ld.ldb);
  stored(c_layout, types.c, m, n, ld.ldc);
  const GemmBatch batch = dense_batch(options.batch, m, n, k);
  set_strided_batch(a_layout, batch.count, batch.stride_a);
  set_strided_batch(b_layout, batch.count, batch.stride_b);
  set_strided_batch(c_layout, batch.count, batch.stride_c);
}

// FP8's per-tensor scales. They go in before the heuristic: they narrow
// which FP8 kernels qualify.
void LtGemm::State::set_fp8_scales() {
  // Each scale 16-byte aligned, as a separately allocated scale tensor would
  // be in a framework.
  scales = DeviceBuffer<float>(8);
  const float host_scales[8] = {kFp8ScaleA, 0, 0, 0, kFp8ScaleB, 0, 0, 0};
  scales.copy_from_host(host_scales);
  // A pageable cudaMemcpy may return before its DMA lands, and the GEMM
  // stream (non-blocking) does not wait for the legacy stream.
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
  const float* scale_a = scales.data();
  const float* scale_b = scales.data() + 4;
  REDLINE_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(matmul.get(), CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_a, sizeof scale_a));
  REDLINE_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(matmul.get(), CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_b, sizeof scale_b));
}

// The heuristic's usable candidates, asked before the operands are
// allocated so an unsupported point costs no allocation, and the workspace
// the largest of them asks for.
void LtGemm::State::find_candidates() {
  LtPreference preference;
  REDLINE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(preference.out()));
  const std::uint64_t max_workspace = options.workspace_bytes;
  REDLINE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                            &max_workspace, sizeof max_workspace));
  // What every batch's pointers keep, as LtMatmul tells it: a batched shape
  // is the same problem to the heuristic in both.
  const GemmDtypeInfo& info = gemm_dtype_info(options.dtype);
  const GemmBatch batch = dense_batch(options.batch, m, n, k);
  set_min_alignments(preference, strided_batch_alignment(batch.count, batch.stride_a * info.a_bytes),
                     strided_batch_alignment(batch.count, batch.stride_b * info.b_bytes),
                     strided_batch_alignment(batch.count, batch.stride_c * info.c_bytes));
  const int requested = std::max(1, options.heuristic_candidates);
  const auto results = std::make_unique<cublasLtMatmulHeuristicResult_t[]>(static_cast<std::size_t>(requested));
  int returned = 0;
  const cublasStatus_t heuristic =
      cublasLtMatmulAlgoGetHeuristic(handle.get(), matmul.get(), a_layout.get(), b_layout.get(), c_layout.get(),
                                     c_layout.get(), preference.get(), requested, results.get(), &returned);
  if (heuristic != CUBLAS_STATUS_SUCCESS && heuristic != CUBLAS_STATUS_NOT_SUPPORTED) {
    throw_if_cublas_failed(heuristic, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
  }
  if (heuristic == CUBLAS_STATUS_SUCCESS) {
    for (int i = 0; i < std::min(returned, requested); ++i)
      if (results[static_cast<std::size_t>(i)].state == CUBLAS_STATUS_SUCCESS)
        candidates.push_back(Candidate{results[static_cast<std::size_t>(i)]});
  }
  if (candidates.empty()) {
    throw GemmUnsupported("cuBLASLt has no algorithm for " + shape_text(options, m, n, k) +
                          " (cublasLtMatmulAlgoGetHeuristic: " + cublasLtGetStatusName(heuristic) + ", " +
                          std::to_string(returned) + " results, none usable)");
  }
  std::size_t workspace_bytes = 0;
  for (const auto& candidate : candidates) workspace_bytes = std::max(workspace_bytes, candidate.result.workspaceSize);
  workspace = DeviceBuffer<std::byte>(workspace_bytes);
}

// Enough sets that a rotation's combined operands overflow L2; a shortage
// of memory for them is this point's OOM, never a smaller rotation that
// would time L2 instead. Only max_buffer_sets cuts it short (tiny shapes),
// and rotation_bytes() lets the caller say so.
void LtGemm::State::allocate_buffer_sets() {
  const GemmDtypeInfo& info = gemm_dtype_info(options.dtype);
  const auto elements = [&](std::int64_t rows, std::int64_t cols) {
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) * static_cast<std::size_t>(options.batch);
  };
  const std::size_t a_count = elements(m, k), b_count = elements(k, n), c_count = elements(m, n);
  const std::size_t a_bytes = a_count * info.a_bytes, b_bytes = b_count * info.b_bytes, c_bytes = c_count * info.c_bytes;
  bytes_per_set = a_bytes + b_bytes + c_bytes;
  std::size_t min_rotation = options.min_rotation_bytes;
  if (min_rotation == 0) {
    int device = 0;
    REDLINE_CUDA_CHECK(cudaGetDevice(&device));
    min_rotation = 2 * static_cast<std::size_t>(query_device_properties(device).l2_bytes);
  }
  const std::size_t wanted = (min_rotation + bytes_per_set - 1) / bytes_per_set;
  const std::size_t set_count =
      std::clamp<std::size_t>(wanted, 1, static_cast<std::size_t>(std::max(1, options.max_buffer_sets)));
  sets.reserve(set_count);
  for (std::size_t i = 0; i < set_count; ++i) {
    BufferSet set{DeviceBuffer<std::byte>(a_bytes), DeviceBuffer<std::byte>(b_bytes), DeviceBuffer<std::byte>(c_bytes)};
    fill_as(types.a, set.a.data(), a_count, seed_for(i, 0), stream);
    fill_as(types.b, set.b.data(), b_count, seed_for(i, 1), stream);
    fill_as(types.c, set.c.data(), c_count, seed_for(i, 2), stream);
    sets.push_back(std::move(set));
  }
}

LtGemm::LtGemm(std::int64_t m, std::int64_t n, std::int64_t k, const GemmOptions& options, cudaStream_t stream)
    : state_(std::make_unique<State>()) {
  if (m < 1 || n < 1 || k < 1 || options.batch < 1 || options.batch > INT32_MAX) {
    throw std::invalid_argument("LtGemm: m, n, k must be >= 1 and the batch 1 to 2^31-1 (got " + std::to_string(m) +
                                ", " + std::to_string(n) + ", " + std::to_string(k) + ", batch " +
                                std::to_string(options.batch) + ")");
  }
  if (const auto reason = gemm_unsupported_reason(options.dtype, options.layout, m, n, k))
    throw GemmUnsupported(*reason);

  State& s = *state_;
  s.m = m;
  s.n = n;
  s.k = k;
  s.options = options;
  s.stream = stream;
  s.types = lt_types(options.dtype);
  s.describe_problem();
  if (is_fp8(options.dtype)) s.set_fp8_scales();
  s.find_candidates();
  s.allocate_buffer_sets();
  select_candidate(0);
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

LtGemm::~LtGemm() = default;

int LtGemm::candidate_count() const { return static_cast<int>(state_->candidates.size()); }

void LtGemm::select_candidate(int candidate) {
  if (candidate < 0 || candidate >= candidate_count()) {
    throw std::out_of_range("LtGemm::select_candidate: candidate " + std::to_string(candidate) + " of " +
                            std::to_string(candidate_count()));
  }
  state_->selected = candidate;
  state_->algorithm = describe_lt_algorithm(candidate, state_->candidates[static_cast<std::size_t>(candidate)].result);
}

const GemmAlgorithm& LtGemm::algorithm() const { return state_->algorithm; }

int LtGemm::buffer_sets() const { return static_cast<int>(state_->sets.size()); }

void LtGemm::enqueue(int set) const {
  const State& s = *state_;
  const int count = buffer_sets();
  const BufferSet& buffers = s.sets[static_cast<std::size_t>(((set % count) + count) % count)];
  const cublasLtMatmulHeuristicResult_t& candidate = s.candidates[static_cast<std::size_t>(s.selected)].result;
  const float alpha = 1.0f, beta = 0.0f;
  REDLINE_CUBLAS_CHECK(cublasLtMatmul(s.handle.get(), s.matmul.get(), &alpha, buffers.a.data(), s.a_layout.get(),
                                      buffers.b.data(), s.b_layout.get(), &beta, buffers.c.data(), s.c_layout.get(),
                                      buffers.c.data(), s.c_layout.get(), &candidate.algo, s.workspace.data(),
                                      candidate.workspaceSize, s.stream));
}

GemmCheck LtGemm::verify(int set) const {
  const State& s = *state_;
  const int count = buffer_sets();
  const BufferSet& buffers = s.sets[static_cast<std::size_t>(((set % count) + count) % count)];
  // All-ones bits are NaN in fp32, fp16 and bf16: an element the GEMM does
  // not write stays NaN and is counted, instead of passing on an old result.
  REDLINE_CUDA_CHECK(cudaMemsetAsync(buffers.c.data(), 0xFF, buffers.c.bytes(), s.stream));
  enqueue(set);
  const bool fp8 = is_fp8(s.options.dtype);
  return gemm_check(s.options.dtype,
                    compare_with_reference(s.options.dtype, s.options.layout, s.m, s.n, s.k, buffers.a.data(),
                                           buffers.b.data(), buffers.c.data(), fp8 ? kFp8ScaleA : 1.0f,
                                           fp8 ? kFp8ScaleB : 1.0f, s.stream,
                                           dense_batch(s.options.batch, s.m, s.n, s.k)));
}

double LtGemm::flop_count() const {
  return gemm_flop_count(state_->m, state_->n, state_->k, state_->options.batch);
}

std::size_t LtGemm::bytes_per_set() const { return state_->bytes_per_set; }

cudaStream_t LtGemm::stream() const { return state_->stream; }

std::string cublaslt_version() {
  // 10000 * major + 100 * minor + patch.
  const std::size_t version = cublasLtGetVersion();
  return std::to_string(version / 10000) + "." + std::to_string((version / 100) % 100) + "." +
         std::to_string(version % 100);
}

#else  // !REDLINE_HAVE_CUBLASLT

// Without cuBLASLt no LtGemm can exist: the constructor throws, so the
// members below are never reached.
struct LtGemm::State {};

LtGemm::LtGemm(std::int64_t, std::int64_t, std::int64_t, const GemmOptions&, cudaStream_t) {
  throw GemmUnsupported("built without cuBLASLt");
}
LtGemm::~LtGemm() = default;
int LtGemm::candidate_count() const { return 0; }
void LtGemm::select_candidate(int candidate) {
  throw std::out_of_range("LtGemm::select_candidate: candidate " + std::to_string(candidate) + " of 0");
}
const GemmAlgorithm& LtGemm::algorithm() const {
  static const GemmAlgorithm none;
  return none;
}
int LtGemm::buffer_sets() const { return 0; }
void LtGemm::enqueue(int) const { throw GemmUnsupported("built without cuBLASLt"); }
GemmCheck LtGemm::verify(int) const { throw GemmUnsupported("built without cuBLASLt"); }
double LtGemm::flop_count() const { return 0; }
std::size_t LtGemm::bytes_per_set() const { return 0; }
cudaStream_t LtGemm::stream() const { return nullptr; }

std::string cublaslt_version() { return ""; }

#endif  // REDLINE_HAVE_CUBLASLT

}  // namespace redline
