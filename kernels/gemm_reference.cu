// compare_with_reference: one kernel computes a 64 x 64 tile of R per block
// from shared-memory tiles and reduces (C - R)^2, R^2 and the non-finite
// count of its tile; a second, single-block kernel sums the per-tile partials
// in a fixed order, so the same inputs always give the same error.
#include "kernels/gemm_reference.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"

namespace redline {

namespace {

constexpr int kTile = 64;        // rows and columns of C per block
constexpr int kTileK = 32;       // K per shared-memory step
constexpr int kThreadsSide = 16; // 16 x 16 threads, each 4 x 4 elements of C
constexpr int kPerThread = kTile / kThreadsSide;
constexpr int kThreads = kThreadsSide * kThreadsSide;
constexpr int kLoadsPerThread = kTile * kTileK / kThreads;

struct Partial {
  double sum_squared_difference;
  double sum_squared_reference;
  unsigned long long nonfinite;
};

// Exact conversions of every stored type to float.
__device__ inline float to_float(float x) { return x; }
__device__ inline float to_float(__half x) { return __half2float(x); }
__device__ inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float to_float(__nv_fp8_e4m3 x) { return static_cast<float>(x); }
__device__ inline float to_float(__nv_fp8_e5m2 x) { return static_cast<float>(x); }

__device__ inline void add_partial(Partial& into, const Partial& other) {
  into.sum_squared_difference += other.sum_squared_difference;
  into.sum_squared_reference += other.sum_squared_reference;
  into.nonfinite += other.nonfinite;
}

// Sums one Partial per thread over the block; thread 0 gets the total.
// Shuffles within a warp, then shared memory across warps (blockDim.x is a
// multiple of 32 and at most 1024).
__device__ Partial block_sum(Partial value) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value.sum_squared_difference += __shfl_down_sync(0xffffffffu, value.sum_squared_difference, offset);
    value.sum_squared_reference += __shfl_down_sync(0xffffffffu, value.sum_squared_reference, offset);
    value.nonfinite += __shfl_down_sync(0xffffffffu, value.nonfinite, offset);
  }
  __shared__ Partial per_warp[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) per_warp[warp] = value;
  __syncthreads();
  Partial total{0, 0, 0};
  if (threadIdx.x == 0) {
    for (unsigned w = 0; w < blockDim.x / 32; ++w) add_partial(total, per_warp[w]);
  }
  return total;
}

// Element (row, kk) of op(A): A is stored K x M (lda = K) when transposed
// (tn), M x K (lda = M) otherwise (nn, nt); column-major either way.
template <bool kATransposed, typename TA>
__device__ inline float op_a(const TA* a, std::int64_t lda, std::int64_t row, std::int64_t kk) {
  return kATransposed ? to_float(a[row * lda + kk]) : to_float(a[kk * lda + row]);
}

// Element (kk, col) of op(B): B is stored N x K (ldb = N) when transposed
// (nt), K x N (ldb = K) otherwise (tn, nn).
template <bool kBTransposed, typename TB>
__device__ inline float op_b(const TB* b, std::int64_t ldb, std::int64_t kk, std::int64_t col) {
  return kBTransposed ? to_float(b[kk * ldb + col]) : to_float(b[col * ldb + kk]);
}

using TileA = float[kTileK][kTile + 1];
using TileB = float[kTileK][kTile + 1];
using ThreadSums = float[kPerThread][kPerThread];

// One K step of op(A) and op(B) into shared memory. Consecutive threads
// take consecutive addresses: along K for tn's A and for tn's and nn's B,
// along M for nn's and nt's A, along N for nt's B. Outside the matrix the
// tile holds zeros.
template <bool kATransposed, bool kBTransposed, typename TA, typename TB>
__device__ __forceinline__ void load_tiles(const TA* __restrict__ a, const TB* __restrict__ b, std::int64_t m,
                                           std::int64_t n, std::int64_t k, std::int64_t lda, std::int64_t ldb,
                                           std::int64_t row0, std::int64_t col0, std::int64_t k0, TileA& a_tile,
                                           TileB& b_tile) {
#pragma unroll
  for (int load = 0; load < kLoadsPerThread; ++load) {
    const int e = static_cast<int>(threadIdx.x) + load * kThreads;
    const int a_kk = kATransposed ? e % kTileK : e / kTile;
    const int a_row = kATransposed ? e / kTileK : e % kTile;
    const std::int64_t ar = row0 + a_row, ak = k0 + a_kk;
    a_tile[a_kk][a_row] = (ar < m && ak < k) ? op_a<kATransposed>(a, lda, ar, ak) : 0.0f;

    const int b_kk = kBTransposed ? e / kTile : e % kTileK;
    const int b_col = kBTransposed ? e % kTile : e / kTileK;
    const std::int64_t bk = k0 + b_kk, bc = col0 + b_col;
    b_tile[b_kk][b_col] = (bk < k && bc < n) ? op_b<kBTransposed>(b, ldb, bk, bc) : 0.0f;
  }
}

// This thread's 4 x 4 products of one K step, summed in fp32, then added to
// the running sums with Kahan compensation.
__device__ __forceinline__ void accumulate_step(const TileA& a_tile, const TileB& b_tile, int tx, int ty,
                                                ThreadSums& sum, ThreadSums& compensation) {
  float step[kPerThread][kPerThread];
#pragma unroll
  for (int r = 0; r < kPerThread; ++r)
#pragma unroll
    for (int s = 0; s < kPerThread; ++s) step[r][s] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < kTileK; ++kk) {
    float a_frag[kPerThread], b_frag[kPerThread];
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) a_frag[r] = a_tile[kk][tx + r * kThreadsSide];
#pragma unroll
    for (int s = 0; s < kPerThread; ++s) b_frag[s] = b_tile[kk][ty + s * kThreadsSide];
#pragma unroll
    for (int r = 0; r < kPerThread; ++r)
#pragma unroll
      for (int s = 0; s < kPerThread; ++s) step[r][s] = fmaf(a_frag[r], b_frag[s], step[r][s]);
  }
#pragma unroll
  for (int r = 0; r < kPerThread; ++r)
#pragma unroll
    for (int s = 0; s < kPerThread; ++s) {
      const float y = step[r][s] - compensation[r][s];
      const float t = sum[r][s] + y;
      compensation[r][s] = (t - sum[r][s]) - y;
      sum[r][s] = t;
    }
}

// This thread's elements of C against R = scale * (sum - compensation).
// Rows run along tx so that a warp reads C (column-major) in 16-element runs.
template <typename TC>
__device__ __forceinline__ Partial difference_from_reference(const TC* __restrict__ c, std::int64_t m, std::int64_t n,
                                                             std::int64_t ldc, float scale, std::int64_t row0,
                                                             std::int64_t col0, int tx, int ty, const ThreadSums& sum,
                                                             const ThreadSums& compensation) {
  Partial mine{0, 0, 0};
#pragma unroll
  for (int r = 0; r < kPerThread; ++r)
#pragma unroll
    for (int s = 0; s < kPerThread; ++s) {
      const std::int64_t row = row0 + tx + r * kThreadsSide, col = col0 + ty + s * kThreadsSide;
      if (row < m && col < n) {
        const double reference =
            static_cast<double>(scale) * (static_cast<double>(sum[r][s]) - static_cast<double>(compensation[r][s]));
        const float value = to_float(c[col * ldc + row]);
        if (isfinite(value)) {
          const double difference = static_cast<double>(value) - reference;
          mine.sum_squared_difference += difference * difference;
        } else {
          ++mine.nonfinite;
        }
        mine.sum_squared_reference += reference * reference;
      }
    }
  return mine;
}

// Accuracy: fp32 products summed in fp32 over one K step, then the steps
// Kahan-summed. Plain sequential fp32 accumulation errs by about
// eps * sqrt(K) relative (7e-6 at K = 16384), the size of the fp32
// tolerance itself; compensated steps keep the reference well below it
// without the fp64 rate that many GPUs lack.
// Batch blockIdx.z of a strided batch: its operands start stride elements
// after the previous batch's, and its tiles' partials follow theirs.
template <typename TA, typename TB, typename TC, bool kATransposed, bool kBTransposed>
__global__ void __launch_bounds__(kThreads, 2)
    reference_difference_kernel(const TA* __restrict__ a, const TB* __restrict__ b, const TC* __restrict__ c,
                                std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda, std::int64_t ldb,
                                std::int64_t ldc, GemmBatch batch, float scale, Partial* __restrict__ partials) {
  // +1 column: the tn loads write down a column of the tile, which without
  // padding puts all 32 lanes of a warp in one bank.
  __shared__ TileA a_tile;
  __shared__ TileB b_tile;

  const int tx = static_cast<int>(threadIdx.x) % kThreadsSide;
  const int ty = static_cast<int>(threadIdx.x) / kThreadsSide;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * kTile;
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.y) * kTile;
  const auto z = static_cast<std::int64_t>(blockIdx.z);
  a += z * batch.stride_a;
  b += z * batch.stride_b;
  c += z * batch.stride_c;

  ThreadSums sum, compensation;
#pragma unroll
  for (int r = 0; r < kPerThread; ++r)
#pragma unroll
    for (int s = 0; s < kPerThread; ++s) sum[r][s] = compensation[r][s] = 0.0f;

  for (std::int64_t k0 = 0; k0 < k; k0 += kTileK) {
    load_tiles<kATransposed, kBTransposed>(a, b, m, n, k, lda, ldb, row0, col0, k0, a_tile, b_tile);
    __syncthreads();
    accumulate_step(a_tile, b_tile, tx, ty, sum, compensation);
    __syncthreads();
  }

  const Partial block = block_sum(difference_from_reference(c, m, n, ldc, scale, row0, col0, tx, ty, sum, compensation));
  if (threadIdx.x == 0)
    partials[(z * gridDim.y + static_cast<std::int64_t>(blockIdx.y)) * gridDim.x + blockIdx.x] = block;
}

constexpr int kSumThreads = 1024;

// One block: a fixed assignment of partials to threads and a fixed tree, so
// the total does not depend on scheduling.
__global__ void __launch_bounds__(kSumThreads)
    sum_partials_kernel(const Partial* __restrict__ partials, std::int64_t count, Partial* __restrict__ total) {
  Partial mine{0, 0, 0};
  for (std::int64_t i = threadIdx.x; i < count; i += blockDim.x) add_partial(mine, partials[i]);
  const Partial block = block_sum(mine);
  if (threadIdx.x == 0) *total = block;
}

template <typename TA, typename TB, typename TC, bool kATransposed, bool kBTransposed>
void launch_reference(const dim3& grid, cudaStream_t stream, const void* a, const void* b, const void* c,
                      std::int64_t m, std::int64_t n, std::int64_t k, const LeadingDims& ld, const GemmBatch& batch,
                      float scale, Partial* partials) {
  reference_difference_kernel<TA, TB, TC, kATransposed, kBTransposed><<<grid, kThreads, 0, stream>>>(
      static_cast<const TA*>(a), static_cast<const TB*>(b), static_cast<const TC*>(c), m, n, k, ld.lda, ld.ldb,
      ld.ldc, batch, scale, partials);
}

template <typename TA, typename TB, typename TC>
ReferenceDifference run_reference(GemmLayout layout, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                                  const void* b, const void* c, float scale, const GemmBatch& batch,
                                  cudaStream_t stream) {
  const LeadingDims ld = leading_dims(layout, m, n, k);
  const std::int64_t tiles_m = (m + kTile - 1) / kTile, tiles_n = (n + kTile - 1) / kTile;
  // gridDim.y and gridDim.z are limited to 65535; N beyond 4 Mi, or more
  // batches, is no GEMM a sweep runs.
  constexpr std::int64_t max_grid_x = std::numeric_limits<int>::max(), max_grid_yz = 65535;
  if (tiles_m > max_grid_x || tiles_n > max_grid_yz || batch.count > max_grid_yz) {
    throw std::invalid_argument("compare_with_reference: m = " + std::to_string(m) + ", n = " + std::to_string(n) +
                                ", batch = " + std::to_string(batch.count) +
                                " exceeds the reference kernel's grid (n at most " +
                                std::to_string(max_grid_yz * kTile) + ", batch at most " +
                                std::to_string(max_grid_yz) + ")");
  }
  const std::int64_t blocks = tiles_m * tiles_n * batch.count;
  DeviceBuffer<Partial> partials(static_cast<std::size_t>(blocks));
  DeviceBuffer<Partial> total(1);
  const dim3 grid(static_cast<unsigned>(tiles_m), static_cast<unsigned>(tiles_n), static_cast<unsigned>(batch.count));
  // Clear a non-sticky error an earlier call left, so the check after the
  // launch blames the launch only.
  (void)cudaGetLastError();
  switch (layout) {
    case GemmLayout::tn:
      launch_reference<TA, TB, TC, true, false>(grid, stream, a, b, c, m, n, k, ld, batch, scale, partials.data());
      break;
    case GemmLayout::nn:
      launch_reference<TA, TB, TC, false, false>(grid, stream, a, b, c, m, n, k, ld, batch, scale, partials.data());
      break;
    case GemmLayout::nt:
      launch_reference<TA, TB, TC, false, true>(grid, stream, a, b, c, m, n, k, ld, batch, scale, partials.data());
      break;
  }
  REDLINE_CUDA_CHECK_LAST();
  sum_partials_kernel<<<1, kSumThreads, 0, stream>>>(partials.data(), blocks, total.data());
  REDLINE_CUDA_CHECK_LAST();

  Partial host{0, 0, 0};
  REDLINE_CUDA_CHECK(cudaMemcpyAsync(&host, total.data(), sizeof host, cudaMemcpyDeviceToHost, stream));
  REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
  ReferenceDifference result;
  result.sum_squared_difference = host.sum_squared_difference;
  result.sum_squared_reference = host.sum_squared_reference;
  result.nonfinite = static_cast<std::int64_t>(host.nonfinite);
  return result;
}

}  // namespace

double ReferenceDifference::relative_error() const {
  if (sum_squared_reference > 0) return std::sqrt(sum_squared_difference / sum_squared_reference);
  // R == 0 cannot come from random non-zero inputs, but if it did only an
  // exact C would be right.
  return sum_squared_difference == 0 ? 0.0 : std::numeric_limits<double>::infinity();
}

ReferenceDifference compare_with_reference(GemmDtype dtype, GemmLayout layout, std::int64_t m, std::int64_t n,
                                           std::int64_t k, const void* a, const void* b, const void* c,
                                           float scale_a, float scale_b, cudaStream_t stream,
                                           const GemmBatch& batch) {
  if (m < 1 || n < 1 || k < 1 || batch.count < 1) {
    throw std::invalid_argument("compare_with_reference: m, n, k and the batch count must be >= 1 (got " +
                                std::to_string(m) + ", " + std::to_string(n) + ", " + std::to_string(k) + ", " +
                                std::to_string(batch.count) + ")");
  }
  if (batch.stride_a < 0 || batch.stride_b < 0 || batch.stride_c < 0)
    throw std::invalid_argument("compare_with_reference: batch strides must be >= 0");
  const float scale = scale_a * scale_b;
  switch (dtype) {
    case GemmDtype::fp32:
    case GemmDtype::tf32:
      return run_reference<float, float, float>(layout, m, n, k, a, b, c, scale, batch, stream);
    case GemmDtype::fp16:
      return run_reference<__half, __half, __half>(layout, m, n, k, a, b, c, scale, batch, stream);
    case GemmDtype::bf16:
      return run_reference<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16>(layout, m, n, k, a, b, c, scale, batch, stream);
    case GemmDtype::fp8_e4m3:
      return run_reference<__nv_fp8_e4m3, __nv_fp8_e4m3, __nv_bfloat16>(layout, m, n, k, a, b, c, scale, batch, stream);
    case GemmDtype::fp8_e4m3_e5m2:
      return run_reference<__nv_fp8_e4m3, __nv_fp8_e5m2, __nv_bfloat16>(layout, m, n, k, a, b, c, scale, batch, stream);
  }
  throw std::invalid_argument("compare_with_reference: unknown dtype");
}

}  // namespace redline
