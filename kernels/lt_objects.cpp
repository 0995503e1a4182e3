// describe_lt_algorithm: reads a cuBLASLt algorithm's config attributes into
// GemmAlgorithm, one attribute at a time, tolerating a cuBLASLt that does
// not report one (it stays -1 / nullopt).
#if defined(REDLINE_HAVE_CUBLASLT)

#include "kernels/lt_objects.cuh"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>

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

}  // namespace redline

#endif  // REDLINE_HAVE_CUBLASLT
