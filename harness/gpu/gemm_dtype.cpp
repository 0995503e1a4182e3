#include "harness/gpu/gemm_dtype.hpp"

#include <array>
#include <stdexcept>

#include "harness/core/usage_error.hpp"

namespace redline {
namespace {

const std::array<GemmDtypeInfo, 6> kDtypes{{
    {GemmDtype::fp32, "fp32", 4, 4, 4, PeakDtype::fp32, 1e-4},
    {GemmDtype::tf32, "tf32", 4, 4, 4, PeakDtype::tf32, 3e-3},
    {GemmDtype::fp16, "fp16", 2, 2, 2, PeakDtype::fp16, 2e-3},
    {GemmDtype::bf16, "bf16", 2, 2, 2, PeakDtype::bf16, 1e-2},
    {GemmDtype::fp8_e4m3, "fp8_e4m3", 1, 1, 2, PeakDtype::fp8, 1e-2},
    {GemmDtype::fp8_e4m3_e5m2, "fp8_e4m3_e5m2", 1, 1, 2, PeakDtype::fp8, 1e-2},
}};

bool is_fp8(GemmDtype dtype) { return dtype == GemmDtype::fp8_e4m3 || dtype == GemmDtype::fp8_e4m3_e5m2; }

}  // namespace

const GemmDtypeInfo& gemm_dtype_info(GemmDtype dtype) { return kDtypes[static_cast<std::size_t>(dtype)]; }

const std::vector<GemmDtype>& all_gemm_dtypes() {
  static const std::vector<GemmDtype> all = [] {
    std::vector<GemmDtype> v;
    for (const auto& info : kDtypes) v.push_back(info.dtype);
    return v;
  }();
  return all;
}

std::optional<GemmDtype> parse_gemm_dtype(std::string_view text) {
  if (text == "fp8") return GemmDtype::fp8_e4m3;
  for (const auto& info : kDtypes)
    if (text == info.name) return info.dtype;
  return std::nullopt;
}

std::string known_gemm_dtypes() {
  std::string names;
  for (const auto& info : kDtypes) names += std::string(names.empty() ? "" : ", ") + info.name;
  return names + " (fp8 = fp8_e4m3), or all";
}

std::vector<GemmDtype> parse_gemm_dtypes(const char* flag, const std::string& text) {
  if (text == "all") return all_gemm_dtypes();
  std::vector<GemmDtype> dtypes;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = std::string_view(text).substr(start, comma - start);
    const auto dtype = parse_gemm_dtype(item);
    if (!dtype) throw UsageError(flag, text, "unknown dtype '" + std::string(item) + "' (known: " + known_gemm_dtypes() + ")");
    bool seen = false;
    for (auto d : dtypes) seen = seen || d == *dtype;
    if (!seen) dtypes.push_back(*dtype);
    start = comma + 1;
  }
  return dtypes;
}

std::optional<GemmLayout> parse_gemm_layout(std::string_view text) {
  if (text == "tn") return GemmLayout::tn;
  if (text == "nn") return GemmLayout::nn;
  if (text == "nt") return GemmLayout::nt;
  return std::nullopt;
}

const char* gemm_layout_name(GemmLayout layout) {
  switch (layout) {
    case GemmLayout::tn: return "tn";
    case GemmLayout::nn: return "nn";
    case GemmLayout::nt: return "nt";
  }
  return "?";
}

LeadingDims leading_dims(GemmLayout layout, std::int64_t m, std::int64_t n, std::int64_t k) {
  switch (layout) {
    case GemmLayout::tn: return {k, k, m};
    case GemmLayout::nn: return {m, k, m};
    case GemmLayout::nt: return {m, n, m};
  }
  throw std::invalid_argument("leading_dims: unknown layout");
}

std::optional<std::string> gemm_unsupported_reason(GemmDtype dtype, GemmLayout layout, std::int64_t m,
                                                   std::int64_t n, std::int64_t k) {
  if (!is_fp8(dtype)) return std::nullopt;
  const std::string name = gemm_dtype_info(dtype).name;
  if (layout != GemmLayout::tn)
    return name + " needs the tn layout (cuBLASLt FP8 GEMMs take A transposed and B not)";
  const LeadingDims ld = leading_dims(layout, m, n, k);
  if (ld.lda % 16 != 0)
    return name + " needs 16-byte aligned leading dimensions: lda = K = " + std::to_string(k) +
           " is not a multiple of 16";
  // 16-byte alignment of the bf16 C alone would allow M % 8; cuBLASLt's FP8
  // heuristic asks more ("M must be divisible by 16", its own log), and
  // torch._scaled_mm checks the same dimension for 16.
  if (m % 16 != 0)
    return name + " needs M a multiple of 16 (cuBLASLt's FP8 kernels): M = " + std::to_string(m) + " is not";
  return std::nullopt;
}

std::optional<std::string> gemm_alignment_note(GemmDtype dtype, GemmLayout layout, std::int64_t m, std::int64_t n,
                                               std::int64_t k) {
  const GemmDtypeInfo& info = gemm_dtype_info(dtype);
  const LeadingDims ld = leading_dims(layout, m, n, k);
  std::string misaligned;
  auto check = [&](const char* name, std::int64_t value, int bytes) {
    if ((value * bytes) % 16 != 0)
      misaligned += std::string(misaligned.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  };
  check("lda", ld.lda, info.a_bytes);
  check("ldb", ld.ldb, info.b_bytes);
  check("ldc", ld.ldc, info.c_bytes);
  if (misaligned.empty()) return std::nullopt;
  return "leading dimension not a multiple of 16 bytes (" + misaligned + "): slower kernels";
}

GemmBatch dense_batch(std::int64_t count, std::int64_t m, std::int64_t n, std::int64_t k) {
  return {count, m * k, k * n, m * n};
}

double gemm_flop_count(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch);
}

double gemm_min_bytes(GemmDtype dtype, std::int64_t m, std::int64_t n, std::int64_t k) {
  const GemmDtypeInfo& info = gemm_dtype_info(dtype);
  const double md = static_cast<double>(m), nd = static_cast<double>(n), kd = static_cast<double>(k);
  return md * kd * info.a_bytes + kd * nd * info.b_bytes + md * nd * info.c_bytes;
}

}  // namespace redline
