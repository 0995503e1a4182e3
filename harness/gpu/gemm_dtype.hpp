// The GEMM precisions measured, what each stores and how exactly
// its result must match the reference, and the layouts it accepts. Pure C++:
// the cuBLASLt side (kernels/gemm_lt.cpp) maps these onto CUDA types.
//
// Layouts follow BLAS's column-major naming, as mamf-finder and cuBLASLt do.
// C is M x N column-major (ldc = M) in both.
//   tn: op(A) = transpose, op(B) = none. A is stored K x M (lda = K), B is
//       stored K x N (ldb = K): both operands run along K in memory, which is
//       what FP8 tensor-core GEMMs require and what a Linear layer's
//       activations x weights^T looks like.
//   nn: A stored M x K (lda = M), B stored K x N (ldb = K).
//   nt: op(A) = none, op(B) = transpose. A stored M x K (lda = M), B stored
//       N x K (ldb = N): the layout of a weight gradient's GEMM, and of
//       attention's dV = P^T dO and dK = dS^T Q seen column-major.
// A batched GEMM (a GEMM sweep's --batch) repeats the layout, each
// matrix dense and the batches one after another (strided batches).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/gpu/gpu_peaks.hpp"

namespace redline {

enum class GemmDtype { fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e4m3_e5m2 };
enum class GemmLayout { tn, nn, nt };

struct GemmDtypeInfo {
  GemmDtype dtype;
  const char* name;        // "bf16", "fp8_e4m3", "fp8_e4m3_e5m2"
  int a_bytes, b_bytes;    // per element of A and B
  int c_bytes;             // per element of C (fp8 writes bf16)
  PeakDtype peak;          // the datasheet rate it is compared with
  // Largest accepted relative Frobenius error ||C - R|| / ||R|| against an
  // fp32-accumulated reference computed from the same (already rounded)
  // inputs. It is set by how C is rounded (and, for tf32, how the inputs
  // are), a few times the rms rounding error of one element: tf32 inputs
  // ~5e-4, fp16 output ~3e-4, bf16 output ~2e-3. fp32 has no such rounding;
  // its bound (1e-4) covers fp32 accumulation over K up to 65536 even in the
  // worst (sequential) order, ~eps * sqrt(K / 2). A dropped k-block of 64 out
  // of K = 65536 already gives 3e-2, so a wrong kernel cannot hide under these.
  double tolerance;
};

const GemmDtypeInfo& gemm_dtype_info(GemmDtype dtype);
const std::vector<GemmDtype>& all_gemm_dtypes();

// "fp32", "tf32", "fp16", "bf16", "fp8" (= fp8_e4m3), "fp8_e4m3",
// "fp8_e4m3_e5m2" (A e4m3, B e5m2). nullopt otherwise.
std::optional<GemmDtype> parse_gemm_dtype(std::string_view text);
// A comma list of the above, or "all". Throws UsageError naming `flag`.
std::vector<GemmDtype> parse_gemm_dtypes(const char* flag, const std::string& text);
// The names parse_gemm_dtype accepts, for help and error messages.
std::string known_gemm_dtypes();

std::optional<GemmLayout> parse_gemm_layout(std::string_view text);  // "tn", "nn", "nt"
const char* gemm_layout_name(GemmLayout layout);

struct LeadingDims {
  std::int64_t lda = 0, ldb = 0, ldc = 0;
};
LeadingDims leading_dims(GemmLayout layout, std::int64_t m, std::int64_t n, std::int64_t k);

// A strided batch: `count` GEMMs of one shape, batch i's A at
// a + i * stride_a elements, B and C likewise.
struct GemmBatch {
  std::int64_t count = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};
// `count` dense matrices back to back: strides M*K, K*N and M*N. Each is a
// multiple of its matrix's leading dimension in every layout, so where the
// leading dimensions are 16-byte aligned every batch's start is too:
// gemm_alignment_note's check covers batches.
GemmBatch dense_batch(std::int64_t count, std::int64_t m, std::int64_t n, std::int64_t k);

// Why cuBLASLt cannot run this combination, or nullopt. FP8 needs the tn
// layout, K a multiple of 16 (16-byte aligned A and B) and M a multiple of
// 16 (cuBLASLt's FP8 heuristic refuses others).
std::optional<std::string> gemm_unsupported_reason(GemmDtype dtype, GemmLayout layout, std::int64_t m,
                                                   std::int64_t n, std::int64_t k);
// For the types that run anyway: a note when a leading dimension is not a
// multiple of 16 bytes, which rules out the fastest kernels. nullopt if aligned.
std::optional<std::string> gemm_alignment_note(GemmDtype dtype, GemmLayout layout, std::int64_t m, std::int64_t n,
                                               std::int64_t k);

// 2*M*N*K (times the batch count): the FLOP count TFLOPS figures are computed from.
double gemm_flop_count(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1);
// Bytes of A, B and C one GEMM touches at least once.
double gemm_min_bytes(GemmDtype dtype, std::int64_t m, std::int64_t n, std::int64_t k);

}  // namespace redline
