// The layout copies: one thread per element, indexed by the BHSD position.
#include "kernels/train/bhsd_transpose.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/train/block_reduce.cuh"

namespace redline {
namespace {

__global__ void copy_heads(const __nv_bfloat16* in, __nv_bfloat16* out, HeadsShape s, bool to_bhsd) {
  const std::int64_t count = s.batch * s.seq * s.heads * s.head_dim;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const std::int64_t e = i % s.head_dim, pos = (i / s.head_dim) % s.seq, head = (i / (s.head_dim * s.seq)) % s.heads;
  const std::int64_t b = i / (s.head_dim * s.seq * s.heads);
  const std::int64_t bshd = ((b * s.seq + pos) * s.heads + head) * s.head_dim + e;
  if (to_bhsd) out[i] = in[bshd];
  else out[bshd] = in[i];
}

void launch(const __nv_bfloat16* in, __nv_bfloat16* out, const HeadsShape& shape, bool to_bhsd, cudaStream_t stream) {
  const std::int64_t count = shape.batch * shape.seq * shape.heads * shape.head_dim;
  copy_heads<<<train_detail::grid_for(count), train_detail::kRowThreads, 0, stream>>>(in, out, shape, to_bhsd);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void bshd_to_bhsd(const __nv_bfloat16* bshd, __nv_bfloat16* bhsd, const HeadsShape& shape, cudaStream_t stream) {
  launch(bshd, bhsd, shape, true, stream);
}
void bhsd_to_bshd(const __nv_bfloat16* bhsd, __nv_bfloat16* bshd, const HeadsShape& shape, cudaStream_t stream) {
  launch(bhsd, bshd, shape, false, stream);
}

}  // namespace redline
