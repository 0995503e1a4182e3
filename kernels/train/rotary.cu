// Rotary kernel: one block per token. Every pair of a token shares its
// position (token % seq), and every head the same d/2 frequencies, so the
// block forms them once, in double, as turns per position; a pair then costs
// a multiply, a floor and an fp32 sincospi. The angle in turns is reduced to
// its fraction in double before the fp32 sincospi, so long sequences with a
// large theta keep their small angles' precision (about 4e-7 rad at any
// position).
#include "kernels/train/rotary.cuh"

#include <stdexcept>
#include <string>

#include "kernels/cuda_check.cuh"
#include "kernels/train/block_reduce.cuh"

namespace redline {
namespace {

constexpr double kTwoPi = 6.283185307179586476925;

__global__ void rotate_token(__nv_bfloat16* x, std::int64_t seq, int heads, int half, double log_theta,
                             float direction) {
  extern __shared__ double turns_per_position[];  // [half]: theta^(-2i/d) / 2 pi
  for (int i = threadIdx.x; i < half; i += blockDim.x)
    turns_per_position[i] = exp(-static_cast<double>(i) / static_cast<double>(half) * log_theta) / kTwoPi;
  __syncthreads();
  const std::int64_t token = blockIdx.x;
  const double position = static_cast<double>(token % seq);
  __nv_bfloat16* row = x + token * heads * 2 * half;
  // Consecutive threads take consecutive i of a head: coalesced.
  for (int j = threadIdx.x; j < heads * half; j += blockDim.x) {
    const int head = j / half, i = j - head * half;
    const double turns = position * turns_per_position[i];
    float s = 0.0f, c = 0.0f;
    sincospif(2.0f * static_cast<float>(turns - floor(turns)), &s, &c);
    s *= direction;
    __nv_bfloat16* pair = row + static_cast<std::int64_t>(head) * 2 * half + i;
    const float a = __bfloat162float(pair[0]), b = __bfloat162float(pair[half]);
    pair[0] = __float2bfloat16(a * c - b * s);
    pair[half] = __float2bfloat16(b * c + a * s);
  }
}

void rotate(__nv_bfloat16* x, const RotaryShape& shape, float direction, cudaStream_t stream) {
  const std::int64_t half = shape.head_dim / 2;
  // The frequencies' shared memory is 8 bytes each; one block per token.
  if (shape.tokens > 0x7fffffff || half * 8 > 48 * 1024 || shape.heads * half > 0x7fffffff)
    throw std::invalid_argument("rotary: " + std::to_string(shape.tokens) + " tokens of " +
                                std::to_string(shape.heads) + " heads of " + std::to_string(shape.head_dim) +
                                " is past one launch");
  rotate_token<<<static_cast<unsigned>(shape.tokens), train_detail::kRowThreads, half * sizeof(double), stream>>>(
      x, shape.seq, static_cast<int>(shape.heads), static_cast<int>(half), log(shape.theta), direction);
  REDLINE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void rotary_forward(__nv_bfloat16* x, const RotaryShape& shape, cudaStream_t stream) { rotate(x, shape, 1.0f, stream); }
void rotary_backward(__nv_bfloat16* d_x, const RotaryShape& shape, cudaStream_t stream) {
  rotate(d_x, shape, -1.0f, stream);
}

}  // namespace redline
