// Eight bf16 values per 16-byte load or store, for the memory-bound row and
// elementwise kernels: one element per thread issues 2-byte accesses, and a
// warp then moves 64 bytes per instruction, too few to keep HBM busy.
// Device code, plus the host test that picks the path.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <type_traits>

namespace redline::train_detail {

constexpr int kPack = 8;  // bf16 values in one 16-byte access

// True when every pointer may be read or written 16 bytes at a time (a null
// one, an absent optional input, counts as aligned).
inline bool pack_aligned(std::initializer_list<const void*> pointers) {
  for (const void* p : pointers)
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) return false;
  return true;
}

// In a block-per-row kernel, each thread takes the packs starting at
// elements first, first + stride, ... of its row, so a thread's share of a
// row reduction is summed in a fixed order.
struct RowPacks {
  std::int64_t first, stride;
  __device__ RowPacks()
      : first(static_cast<std::int64_t>(threadIdx.x) * kPack), stride(static_cast<std::int64_t>(blockDim.x) * kPack) {}
};

// Calls launch(std::true_type{}) when `aligned`, else launch(std::false_type{}):
// a kernel's template argument kAligned from one runtime test.
template <typename Launch>
void with_alignment(bool aligned, Launch&& launch) {
  if (aligned)
    launch(std::true_type{});
  else
    launch(std::false_type{});
}

__device__ inline float low_half(unsigned word) { return __bfloat162float(__ushort_as_bfloat16(word & 0xffffu)); }
__device__ inline float high_half(unsigned word) { return __bfloat162float(__ushort_as_bfloat16(word >> 16)); }
__device__ inline unsigned bf16_bits(float value) { return __bfloat16_as_ushort(__float2bfloat16(value)); }

// The `kPack` values from p as fp32; those past `left` (the elements left
// from p) read as 0. kAligned says p is 16-byte aligned; a full pack is then
// one load. Otherwise, or for the last partial pack, one element at a time.
// Both ways convert and round each element with the same functions, so the
// path never changes a result.
template <bool kAligned>
__device__ inline void load_pack(const __nv_bfloat16* p, std::int64_t left, float (&out)[kPack]) {
  if (kAligned && left >= kPack) {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const unsigned words[4] = {raw.x, raw.y, raw.z, raw.w};  // little-endian: p[2i] is the low half
#pragma unroll
    for (int i = 0; i < 4; ++i) out[2 * i] = low_half(words[i]), out[2 * i + 1] = high_half(words[i]);
    return;
  }
#pragma unroll
  for (int i = 0; i < kPack; ++i) out[i] = i < left ? __bfloat162float(p[i]) : 0.0f;
}

// The first min(left, kPack) values of `in`, rounded to bf16, to p.
template <bool kAligned>
__device__ inline void store_pack(__nv_bfloat16* p, std::int64_t left, const float (&in)[kPack]) {
  if (kAligned && left >= kPack) {
    unsigned words[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) words[i] = bf16_bits(in[2 * i]) | (bf16_bits(in[2 * i + 1]) << 16);
    *reinterpret_cast<uint4*>(p) = make_uint4(words[0], words[1], words[2], words[3]);
    return;
  }
#pragma unroll
  for (int i = 0; i < kPack; ++i)
    if (i < left) p[i] = __float2bfloat16(in[i]);
}

}  // namespace redline::train_detail
