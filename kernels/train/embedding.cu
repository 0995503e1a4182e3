// Embedding gather and scatter-add: one block per token row.
#include "kernels/train/embedding.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/train/block_reduce.cuh"

namespace redline {
namespace {

__global__ void gather_rows(const std::int32_t* tokens, const __nv_bfloat16* table, __nv_bfloat16* out,
                            std::int64_t width) {
  const std::int64_t t = blockIdx.x;
  const __nv_bfloat16* row = table + static_cast<std::int64_t>(tokens[t]) * width;
  for (std::int64_t j = threadIdx.x; j < width; j += blockDim.x) out[t * width + j] = row[j];
}

__global__ void scatter_add_rows(const std::int32_t* tokens, const __nv_bfloat16* d_out, float* d_table,
                                 std::int64_t width) {
  const std::int64_t t = blockIdx.x;
  float* row = d_table + static_cast<std::int64_t>(tokens[t]) * width;
  for (std::int64_t j = threadIdx.x; j < width; j += blockDim.x) atomicAdd(row + j, __bfloat162float(d_out[t * width + j]));
}

}  // namespace

void embedding_forward(const std::int32_t* tokens, const __nv_bfloat16* table, __nv_bfloat16* out,
                       std::int64_t tokens_count, std::int64_t width, cudaStream_t stream) {
  gather_rows<<<static_cast<unsigned>(tokens_count), train_detail::kRowThreads, 0, stream>>>(tokens, table, out, width);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

void embedding_backward(const std::int32_t* tokens, const __nv_bfloat16* d_out, float* d_table,
                        std::int64_t tokens_count, std::int64_t width, cudaStream_t stream) {
  scatter_add_rows<<<static_cast<unsigned>(tokens_count), train_detail::kRowThreads, 0, stream>>>(tokens, d_out,
                                                                                                  d_table, width);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace redline
