// Peak memory against batch size: a training step's memory is close to
// linear in the batch once the model is loaded (weights, gradients and
// optimizer state fixed; activations per sample), so a straight line through
// the largest batches that fit, and the memory an out-of-memory trial
// reached before it failed, predict the largest batch that fits.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace redline {

struct MemoryPoint {
  std::int64_t batch = 0;
  double bytes = 0;  // peak memory of the trial
  bool fit = true;   // ran ok; false: ran out of memory, having reached `bytes`
};

struct MemoryFit {
  double fixed_bytes = 0;                        // the part that does not grow with the batch
  double bytes_per_sample = 0;                   // the slope
  std::int64_t first_batch = 0, last_batch = 0;  // the batches fitted
  int batches = 0;
};

// Least squares through the peaks (the largest per batch) of the batch sizes
// that fit within a factor `span` of the largest that fit (all of them down
// to it: a bisection's sizes crowd together near the limit and alone would
// say little of the slope). nullopt with fewer than two batch sizes or
// memory that does not grow with the batch (by less than 1% of the largest
// peak over the batches fitted: noise).
std::optional<MemoryFit> fit_memory(const std::vector<MemoryPoint>& points, double span = 8);

// The largest batch whose fitted memory stays within what the out-of-memory
// trials reached (the most any of them reached: a trial that grew until the
// allocation failed shows where the limit is). nullopt without a fit or an
// out-of-memory trial that reached beyond every trial that fit.
std::optional<std::int64_t> predict_max_batch(const std::vector<MemoryPoint>& points, double span = 8);

}  // namespace redline
