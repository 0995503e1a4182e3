// Where the GEMM peak search looks for the maximum achievable matmul FLOPS
// (MAMF) without measuring every shape. Pure: the shapes to try, given what
// earlier stages measured.
//
// An exhaustive sweep (mamf-finder's way) times every M, N, K on a grid:
// 64^3 = 262144 shapes for 256..16384 step 256, hours per dtype. The peak,
// though, sits where two things hold, and both can be aimed at:
//   * the shape is large enough that the kernel is compute bound (K and the
//     tile count big enough to amortize prologue and epilogue), and
//   * tile and wave quantization lose nothing: M and N are multiples of the
//     tile, and the tile count is a whole number of waves over the SMs.
// So the search runs in three stages:
//   1. coarse: a handful of large shapes (M = N in 4096..16384, K = 4096 and
//      8192) find the size region and the tile cuBLASLt picks there;
//   2. wave-aligned: around the best coarse shape, shapes whose tile count is
//      exactly 1..8 full waves for that tile and SM count (the quantization
//      model says these lose nothing), at the best K and twice it;
//   3. local: one step of +-256 along each of M, N and K around the best so
//      far, for what the model does not see (L2 reuse, the library's choice).
// About 40 shapes in all. `--search exhaustive` times a whole grid, and
// `--search check` both, reporting how close the default search came and in
// what share of the time.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "harness/gpu/gemm_model.hpp"

namespace redline {

struct GemmSize {
  std::int64_t m = 0, n = 0, k = 0;
  bool operator==(const GemmSize&) const = default;
};

// Stage 1.
std::vector<GemmSize> coarse_peak_shapes();

// Stage 2: M = a * tile.rows, N = b * tile.cols with a * b = w * sm_count
// (w = 1..8), a and b within a factor of 4 of the best shape's tile counts
// along M and N, K in {best.k, 2 * best.k}. At most `max_shapes`, nearest to
// `best`'s area first. Empty for an unknown tile or SM count.
std::vector<GemmSize> wave_aligned_shapes(const GemmSize& best, const TileShape& tile, int sm_count,
                                          std::size_t max_shapes = 16);

// Stage 3: best +- step along each dimension, dimensions kept >= step.
std::vector<GemmSize> neighbour_shapes(const GemmSize& best, std::int64_t step = 256);

// Every (m, n, k) of three ranges, m outermost.
std::vector<GemmSize> grid_shapes(const std::vector<std::int64_t>& ms, const std::vector<std::int64_t>& ns,
                                  const std::vector<std::int64_t>& ks);

// `candidates` without the shapes already in `measured`, and without repeats.
std::vector<GemmSize> unmeasured(const std::vector<GemmSize>& candidates, const std::vector<GemmSize>& measured);

}  // namespace redline
