#include "harness/gemm/gemm_peak_search.hpp"

#include <algorithm>
#include <cmath>

namespace redline {

std::vector<GemmSize> coarse_peak_shapes() {
  std::vector<GemmSize> shapes;
  for (std::int64_t mn : {4096, 8192, 12288, 16384})
    for (std::int64_t k : {4096, 8192}) shapes.push_back({mn, mn, k});
  return shapes;
}

std::vector<GemmSize> wave_aligned_shapes(const GemmSize& best, const TileShape& tile, int sm_count,
                                          std::size_t max_shapes) {
  if (tile.rows < 1 || tile.cols < 1 || sm_count < 1) return {};
  const double best_a = std::max(1.0, static_cast<double>(best.m) / static_cast<double>(tile.rows));
  const double best_b = std::max(1.0, static_cast<double>(best.n) / static_cast<double>(tile.cols));
  struct Candidate {
    GemmSize size;
    double distance;  // |log(area / best area)|: how far from the best region
  };
  std::vector<Candidate> found;
  for (std::int64_t waves = 1; waves <= 8; ++waves) {
    const std::int64_t tiles = waves * sm_count;
    for (std::int64_t a = 1; a <= tiles; ++a) {
      if (tiles % a != 0) continue;
      const std::int64_t b = tiles / a;
      if (a < best_a / 4 || a > best_a * 4 || b < best_b / 4 || b > best_b * 4) continue;
      const GemmSize mn{a * tile.rows, b * tile.cols, 0};
      const double distance = std::abs(std::log(static_cast<double>(mn.m) * static_cast<double>(mn.n) /
                                                (static_cast<double>(best.m) * static_cast<double>(best.n))));
      for (std::int64_t k : {best.k, 2 * best.k}) found.push_back({{mn.m, mn.n, k}, distance});
    }
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const Candidate& x, const Candidate& y) { return x.distance < y.distance; });
  std::vector<GemmSize> shapes;
  for (const auto& c : found) {
    if (shapes.size() >= max_shapes) break;
    if (std::find(shapes.begin(), shapes.end(), c.size) == shapes.end()) shapes.push_back(c.size);
  }
  return shapes;
}

std::vector<GemmSize> neighbour_shapes(const GemmSize& best, std::int64_t step) {
  std::vector<GemmSize> shapes;
  for (int dim = 0; dim < 3; ++dim)
    for (std::int64_t delta : {-step, step}) {
      GemmSize s = best;
      std::int64_t& v = dim == 0 ? s.m : dim == 1 ? s.n : s.k;
      v += delta;
      if (v >= step) shapes.push_back(s);
    }
  return shapes;
}

std::vector<GemmSize> grid_shapes(const std::vector<std::int64_t>& ms, const std::vector<std::int64_t>& ns,
                                  const std::vector<std::int64_t>& ks) {
  std::vector<GemmSize> shapes;
  shapes.reserve(ms.size() * ns.size() * ks.size());
  for (auto m : ms)
    for (auto n : ns)
      for (auto k : ks) shapes.push_back({m, n, k});
  return shapes;
}

std::vector<GemmSize> unmeasured(const std::vector<GemmSize>& candidates, const std::vector<GemmSize>& measured) {
  std::vector<GemmSize> left;
  for (const auto& c : candidates) {
    const bool seen = std::find(measured.begin(), measured.end(), c) != measured.end() ||
                      std::find(left.begin(), left.end(), c) != left.end();
    if (!seen) left.push_back(c);
  }
  return left;
}

}  // namespace redline
