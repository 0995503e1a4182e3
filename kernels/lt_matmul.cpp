// LtMatmul: the row-major problem mapped onto cuBLASLt's column-major one
// (C^T = op(B)^T op(A)^T, so cuBLASLt's A is the caller's B), strided
// batches on the layouts, and one heuristic algorithm with its workspace.
#include "kernels/lt_matmul.cuh"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"

#if defined(REDLINE_HAVE_CUBLASLT)
#include <cublasLt.h>

#include "kernels/lt_objects.cuh"
#endif

namespace redline {

const char* matmul_element_name(MatmulElement element) {
  switch (element) {
    case MatmulElement::fp16: return "fp16";
    case MatmulElement::bf16: return "bf16";
    case MatmulElement::fp32: return "fp32";
  }
  return "?";
}

std::string describe(const StridedMatmul& p) {
  return std::string(matmul_element_name(p.inputs)) + "->" + matmul_element_name(p.output) +
         " m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
         (p.transpose_a ? " A^T" : " A") + (p.transpose_b ? " B^T" : " B") + " batch=" + std::to_string(p.batch) +
         (p.beta != 0.0f ? " beta=" + std::to_string(p.beta) : std::string());
}

double matmul_flop_count(const StridedMatmul& p) {
  return 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) *
         static_cast<double>(p.batch);
}

std::optional<ColumnMajorGemm> column_major_equivalent(const StridedMatmul& p) {
  if (p.transpose_a && p.transpose_b) return std::nullopt;
  if (p.output != p.inputs || p.beta != 0.0f) return std::nullopt;
  const bool dense = p.batch == 1 || (p.stride_a == p.m * p.k && p.stride_b == p.k * p.n && p.stride_c == p.m * p.n);
  if (!dense) return std::nullopt;
  const GemmLayout layout = p.transpose_b ? GemmLayout::tn : p.transpose_a ? GemmLayout::nt : GemmLayout::nn;
  return ColumnMajorGemm{layout, p.n, p.m, p.k, p.batch};
}

#if defined(REDLINE_HAVE_CUBLASLT)

namespace {

cudaDataType_t cuda_type(MatmulElement element) {
  switch (element) {
    case MatmulElement::fp16: return CUDA_R_16F;
    case MatmulElement::bf16: return CUDA_R_16BF;
    case MatmulElement::fp32: return CUDA_R_32F;
  }
  throw std::invalid_argument("LtMatmul: unknown element type");
}

std::int64_t element_bytes(MatmulElement element) { return element == MatmulElement::fp32 ? 4 : 2; }

void validate(const StridedMatmul& p) {
  if (p.m < 1 || p.n < 1 || p.k < 1 || p.batch < 1)
    throw std::invalid_argument("LtMatmul: m, n, k and batch must be >= 1 (" + describe(p) + ")");
  if (p.batch > INT32_MAX) throw std::invalid_argument("LtMatmul: batch exceeds cuBLASLt's int32 count");
  if (p.inputs == MatmulElement::fp32) throw std::invalid_argument("LtMatmul: inputs must be fp16 or bf16");
  if (p.stride_a < 0 || p.stride_b < 0 || p.stride_c < 0)
    throw std::invalid_argument("LtMatmul: strides must be >= 0 (" + describe(p) + ")");
}

// A column-major layout of `rows` x `cols` (leading dimension `rows`),
// repeated `batch` times `stride` elements apart.
void make_layout(LtLayout& layout, cudaDataType_t type, std::int64_t rows, std::int64_t cols, std::int64_t batch,
                 std::int64_t stride) {
  REDLINE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(layout.out(), type, static_cast<std::uint64_t>(rows),
                                                  static_cast<std::uint64_t>(cols), rows));
  set_strided_batch(layout, batch, stride);
}

}  // namespace

struct LtMatmul::State {
  StridedMatmul problem;
  LtHandle handle;
  LtMatmulDesc matmul;
  LtLayout lt_a, lt_b, lt_c;  // cuBLASLt's A is the caller's B (see the file comment)
  std::uint32_t align_a = 256, align_b = 256, align_c = 256;  // the caller's A, B, C
  cublasLtMatmulHeuristicResult_t chosen{};
  GemmAlgorithm algorithm;
  DeviceBuffer<std::byte> workspace;  // empty when the plan uses a shared one
  void* workspace_data = nullptr;

  void describe_problem();
  void choose_algorithm(std::size_t max_workspace_bytes, void* shared_workspace);
};

// C^T (n x m) = op'(B) op'(A): the caller's row-major B, read column-major,
// is B^T as stored; the transposes follow from there.
void LtMatmul::State::describe_problem() {
  const StridedMatmul& p = problem;
  REDLINE_CUBLAS_CHECK(cublasLtCreate(handle.out()));
  REDLINE_CUBLAS_CHECK(cublasLtMatmulDescCreate(matmul.out(), CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_lt_a = p.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_lt_b = p.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  REDLINE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(matmul.get(), CUBLASLT_MATMUL_DESC_TRANSA, &op_lt_a, sizeof op_lt_a));
  REDLINE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(matmul.get(), CUBLASLT_MATMUL_DESC_TRANSB, &op_lt_b, sizeof op_lt_b));
  const cudaDataType_t in = cuda_type(p.inputs);
  if (p.transpose_b) make_layout(lt_a, in, p.k, p.n, p.batch, p.stride_b);
  else make_layout(lt_a, in, p.n, p.k, p.batch, p.stride_b);
  if (p.transpose_a) make_layout(lt_b, in, p.m, p.k, p.batch, p.stride_a);
  else make_layout(lt_b, in, p.k, p.m, p.batch, p.stride_a);
  make_layout(lt_c, cuda_type(p.output), p.n, p.m, p.batch, p.stride_c);
  align_a = strided_batch_alignment(p.batch, p.stride_a * element_bytes(p.inputs));
  align_b = strided_batch_alignment(p.batch, p.stride_b * element_bytes(p.inputs));
  align_c = strided_batch_alignment(p.batch, p.stride_c * element_bytes(p.output));
}

// The heuristic's first choice under the pointers' alignment and the
// workspace bound; none is GemmUnsupported.
void LtMatmul::State::choose_algorithm(std::size_t max_workspace_bytes, void* shared_workspace) {
  LtPreference preference;
  REDLINE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(preference.out()));
  const std::uint64_t max_workspace = max_workspace_bytes;
  REDLINE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                            &max_workspace, sizeof max_workspace));
  set_min_alignments(preference, align_b, align_a, align_c);  // cuBLASLt's A is the caller's B
  int returned = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle.get(), matmul.get(), lt_a.get(), lt_b.get(), lt_c.get(), lt_c.get(),
                                     preference.get(), 1, &chosen, &returned);
  if (status != CUBLAS_STATUS_SUCCESS && status != CUBLAS_STATUS_NOT_SUPPORTED)
    throw_if_cublas_failed(status, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
  if (status != CUBLAS_STATUS_SUCCESS || returned < 1 || chosen.state != CUBLAS_STATUS_SUCCESS) {
    throw GemmUnsupported("cuBLASLt has no algorithm for " + describe(problem) + " (" +
                          cublasLtGetStatusName(status) + ")");
  }
  algorithm = describe_lt_algorithm(0, chosen);
  if (shared_workspace != nullptr) {
    workspace_data = shared_workspace;
    return;
  }
  workspace = DeviceBuffer<std::byte>(chosen.workspaceSize);
  workspace_data = workspace.data();
}

LtMatmul::LtMatmul(const StridedMatmul& problem, std::size_t max_workspace_bytes)
    : state_(std::make_unique<State>()) {
  validate(problem);
  state_->problem = problem;
  state_->describe_problem();
  state_->choose_algorithm(max_workspace_bytes, nullptr);
}

LtMatmul::LtMatmul(const StridedMatmul& problem, LtWorkspace shared) : state_(std::make_unique<State>()) {
  validate(problem);
  if (shared.data == nullptr && shared.bytes > 0)
    throw std::invalid_argument("LtMatmul: a shared workspace of " + std::to_string(shared.bytes) + " bytes at null");
  state_->problem = problem;
  state_->describe_problem();
  // A zero-byte shared workspace still must not allocate one of its own.
  static std::byte no_workspace;
  state_->choose_algorithm(shared.bytes, shared.data != nullptr ? shared.data : &no_workspace);
}

void LtMatmul::enqueue(const void* a, const void* b, void* c, cudaStream_t stream) const {
  enqueue(a, b, c, c, stream);
}

void LtMatmul::enqueue(const void* a, const void* b, const void* c, void* d, cudaStream_t stream) const {
  const State& s = *state_;
  const auto misaligned = [](const void* pointer, std::uint32_t alignment) {
    return reinterpret_cast<std::uintptr_t>(pointer) % alignment != 0;
  };
  if (misaligned(a, s.align_a) || misaligned(b, s.align_b) || misaligned(c, s.align_c) || misaligned(d, s.align_c))
    throw std::invalid_argument("LtMatmul::enqueue: a pointer is less aligned than the plan assumed (" +
                                describe(s.problem) + ")");
  const float alpha = s.problem.alpha, beta = s.problem.beta;
  REDLINE_CUBLAS_CHECK(cublasLtMatmul(s.handle.get(), s.matmul.get(), &alpha, b, s.lt_a.get(), a, s.lt_b.get(),
                                      &beta, c, s.lt_c.get(), d, s.lt_c.get(), &s.chosen.algo, s.workspace_data,
                                      s.chosen.workspaceSize, stream));
}

#else  // !REDLINE_HAVE_CUBLASLT

// Without cuBLASLt no plan can exist: the constructor throws.
struct LtMatmul::State {
  StridedMatmul problem;
  GemmAlgorithm algorithm;
};

LtMatmul::LtMatmul(const StridedMatmul&, std::size_t) { throw GemmUnsupported("built without cuBLASLt"); }
LtMatmul::LtMatmul(const StridedMatmul&, LtWorkspace) { throw GemmUnsupported("built without cuBLASLt"); }
void LtMatmul::enqueue(const void*, const void*, void*, cudaStream_t) const {
  throw GemmUnsupported("built without cuBLASLt");
}
void LtMatmul::enqueue(const void*, const void*, const void*, void*, cudaStream_t) const {
  throw GemmUnsupported("built without cuBLASLt");
}

#endif  // REDLINE_HAVE_CUBLASLT

LtMatmul::~LtMatmul() = default;
LtMatmul::LtMatmul(LtMatmul&&) noexcept = default;
LtMatmul& LtMatmul::operator=(LtMatmul&&) noexcept = default;
const StridedMatmul& LtMatmul::problem() const { return state_->problem; }
const GemmAlgorithm& LtMatmul::algorithm() const { return state_->algorithm; }

}  // namespace redline
