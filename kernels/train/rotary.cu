// Rotary kernel: one thread per pair. The angle is formed in double and
// reduced modulo 2 pi before fp32 sincos, so long sequences with a large
// theta keep their small angles' precision.
#include "kernels/train/rotary.cuh"

#include "kernels/cuda_check.cuh"
#include "kernels/train/block_reduce.cuh"

namespace redline {
namespace {

__global__ void rotate_pairs(__nv_bfloat16* x, std::int64_t seq, std::int64_t heads, std::int64_t head_dim,
                             double log_theta, float direction, std::int64_t pairs_count) {
  const std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= pairs_count) return;
  const std::int64_t half = head_dim / 2;
  const std::int64_t i = p % half, head = (p / half) % heads, token = p / (half * heads);
  const double inv_freq = exp(-2.0 * static_cast<double>(i) / static_cast<double>(head_dim) * log_theta);
  const double angle = fmod(static_cast<double>(token % seq) * inv_freq, 6.283185307179586476925);
  float s = 0.0f, c = 0.0f;
  sincosf(static_cast<float>(angle), &s, &c);
  s *= direction;
  __nv_bfloat16* row = x + (token * heads + head) * head_dim;
  const float a = __bfloat162float(row[i]), b = __bfloat162float(row[i + half]);
  row[i] = __float2bfloat16(a * c - b * s);
  row[i + half] = __float2bfloat16(b * c + a * s);
}

void rotate(__nv_bfloat16* x, const RotaryShape& shape, float direction, cudaStream_t stream) {
  const std::int64_t pairs = shape.tokens * shape.heads * (shape.head_dim / 2);
  rotate_pairs<<<train_detail::grid_for(pairs), train_detail::kRowThreads, 0, stream>>>(
      x, shape.seq, shape.heads, shape.head_dim, log(shape.theta), direction, pairs);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void rotary_forward(__nv_bfloat16* x, const RotaryShape& shape, cudaStream_t stream) { rotate(x, shape, 1.0f, stream); }
void rotary_backward(__nv_bfloat16* d_x, const RotaryShape& shape, cudaStream_t stream) {
  rotate(d_x, shape, -1.0f, stream);
}

}  // namespace redline
