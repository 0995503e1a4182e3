// describe_lt_algorithm: reads a cuBLASLt algorithm's config attributes into
// GemmAlgorithm, one attribute at a time, tolerating a cuBLASLt that does
// not report one (it stays -1 / nullopt). And the layout and preference
// settings LtGemm and LtMatmul share, so a shape both describe is the same
// problem to the heuristic.
#if defined(REDLINE_HAVE_CUBLASLT)

#include "kernels/lt_objects.cuh"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "kernels/cuda_check.cuh"

namespace redline {

namespace {

// An algorithm attribute, or nullopt when this cuBLASLt does not report it.
// The size must match the attribute's storage exactly, hence the type.
template <typename T>
std::optional<T> algo_attribute(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attribute) {
  T value{};
  std::size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof value, &written) !=
          CUBLAS_STATUS_SUCCESS ||
      written != sizeof value) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

GemmAlgorithm describe_lt_algorithm(int candidate, const cublasLtMatmulHeuristicResult_t& result) {
  GemmAlgorithm algorithm;
  algorithm.candidate = candidate;
  if (auto id = algo_attribute<std::int32_t>(result.algo, CUBLASLT_ALGO_CONFIG_ID)) algorithm.algo_id = *id;
  if (auto tile = algo_attribute<std::uint32_t>(result.algo, CUBLASLT_ALGO_CONFIG_TILE_ID)) {
    algorithm.tile_id = static_cast<int>(*tile);
    algorithm.tile = tile_from_cublaslt_id(algorithm.tile_id);
  }
  if (auto splits = algo_attribute<std::int32_t>(result.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM))
    algorithm.split_k = std::max(1, static_cast<int>(*splits));
  if (auto stages = algo_attribute<std::uint32_t>(result.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID))
    algorithm.stages_id = static_cast<int>(*stages);
  if (auto cluster = algo_attribute<std::uint16_t>(result.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID))
    algorithm.cluster_shape_id = static_cast<int>(*cluster);
  algorithm.heuristic_waves = result.wavesCount;
  algorithm.workspace_bytes = result.workspaceSize;
  return algorithm;
}

void set_strided_batch(const LtLayout& layout, std::int64_t batch, std::int64_t stride) {
  const auto count = static_cast<std::int32_t>(batch);
  REDLINE_CUBLAS_CHECK(
      cublasLtMatrixLayoutSetAttribute(layout.get(), CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
  REDLINE_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout.get(), CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                        &stride, sizeof stride));
}

std::uint32_t strided_batch_alignment(std::int64_t batch, std::int64_t stride_bytes) {
  if (batch == 1 || stride_bytes <= 0) return 256;
  const auto bytes = static_cast<std::uint64_t>(stride_bytes);
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(256, bytes & (~bytes + 1)));
}

void set_min_alignments(const LtPreference& preference, std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  const std::pair<cublasLtMatmulPreferenceAttributes_t, std::uint32_t> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, c},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, c}};
  for (const auto& [attribute, bytes] : alignments)
    REDLINE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference.get(), attribute, &bytes, sizeof bytes));
}

}  // namespace redline

#endif  // REDLINE_HAVE_CUBLASLT
