#include "harness/measure/memory_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace redline {

std::optional<MemoryFit> fit_memory(const std::vector<MemoryPoint>& points, double span) {
  std::map<std::int64_t, double> peak;  // per batch size that fit: the largest of its trials
  for (const auto& p : points)
    if (p.fit && p.bytes > 0) peak[p.batch] = std::max(peak[p.batch], p.bytes);
  if (peak.size() < 2) return std::nullopt;
  // The largest batches: below them the fixed part (and allocators' slack) dominates.
  const double smallest = static_cast<double>(peak.rbegin()->first) / span;
  while (peak.size() > 2 && static_cast<double>(peak.begin()->first) < smallest) peak.erase(peak.begin());
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [batch, bytes] : peak) {
    const double x = static_cast<double>(batch);
    n += 1, sx += x, sy += bytes, sxx += x * x, sxy += x * bytes;
  }
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  if (!(slope > 0) || !std::isfinite(slope)) return std::nullopt;
  // Growth under 1% of the peak over the batches fitted is page-level noise,
  // not memory per sample: it would predict limits far off.
  const double growth = slope * static_cast<double>(peak.rbegin()->first - peak.begin()->first);
  if (growth < 0.01 * peak.rbegin()->second) return std::nullopt;
  MemoryFit fit;
  fit.bytes_per_sample = slope;
  fit.fixed_bytes = (sy - slope * sx) / n;
  fit.first_batch = peak.begin()->first;
  fit.last_batch = peak.rbegin()->first;
  fit.batches = static_cast<int>(peak.size());
  return fit;
}

std::optional<std::int64_t> predict_max_batch(const std::vector<MemoryPoint>& points, double span) {
  const auto fit = fit_memory(points, span);
  if (!fit) return std::nullopt;
  double reached = 0, most_that_fit = 0;
  for (const auto& p : points) {
    double& most = p.fit ? most_that_fit : reached;
    most = std::max(most, p.bytes);
  }
  // An OOM trial that stopped short of what a fitting one used failed at a
  // large allocation before it grew (a GPU trial's NVML peak is often the
  // model alone): it shows nothing of the limit. On an H200 such a trial
  // predicted 3 for a mode that ran 51.
  if (reached <= most_that_fit) return std::nullopt;
  const double batches = std::floor((reached - fit->fixed_bytes) / fit->bytes_per_sample);
  if (!(batches >= 1) || batches > 1e15) return std::nullopt;
  return static_cast<std::int64_t>(batches);
}

}  // namespace redline
