// The layout copies: one thread per 16 bytes (8 elements) of a head's row
// where the head dim and the pointers allow, else per element, indexed by the
// BHSD position. Per vector, the four 64-bit divisions that place it cost an
// eighth of what they would per element, so the copy runs at memory speed.
#include "kernels/train/bhsd_transpose.cuh"

#include <type_traits>

#include "kernels/cuda_check.cuh"
#include "kernels/train/bf16_pack.cuh"
#include "kernels/train/block_reduce.cuh"

namespace redline {
namespace {

template <bool kVectors>
__global__ void copy_heads(const __nv_bfloat16* in, __nv_bfloat16* out, HeadsShape s, bool to_bhsd) {
  using Unit = std::conditional_t<kVectors, uint4, __nv_bfloat16>;
  constexpr std::int64_t kWidth = sizeof(Unit) / sizeof(__nv_bfloat16);
  const std::int64_t units_per_row = s.head_dim / kWidth;
  const std::int64_t count = s.batch * s.heads * s.seq * units_per_row;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const std::int64_t row = i / units_per_row, e = (i - row * units_per_row) * kWidth;  // row: BHSD (b, head, pos)
  const std::int64_t pos = row % s.seq, head = (row / s.seq) % s.heads, b = row / (s.seq * s.heads);
  const std::int64_t bhsd = row * s.head_dim + e;
  const std::int64_t bshd = ((b * s.seq + pos) * s.heads + head) * s.head_dim + e;
  const std::int64_t from = to_bhsd ? bshd : bhsd, to = to_bhsd ? bhsd : bshd;
  *reinterpret_cast<Unit*>(out + to) = *reinterpret_cast<const Unit*>(in + from);
}

void launch(const __nv_bfloat16* in, __nv_bfloat16* out, const HeadsShape& shape, bool to_bhsd, cudaStream_t stream) {
  const bool vectors = shape.head_dim % train_detail::kPack == 0 && train_detail::pack_aligned({in, out});
  const std::int64_t units =
      shape.batch * shape.seq * shape.heads * shape.head_dim / (vectors ? train_detail::kPack : 1);
  train_detail::with_alignment(vectors, [&](auto v) {
    copy_heads<decltype(v)::value>
        <<<train_detail::grid_for(units), train_detail::kRowThreads, 0, stream>>>(in, out, shape, to_bhsd);
  });
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
