#include "harness/gemm/gemm_power_cap_fit.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "harness/gpu/gemm_model.hpp"

namespace redline {
namespace {

double mean(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

std::int64_t integer_param(const ResultRow& row, const std::string& name) {
  const auto it = row.params.find(name);
  if (it == row.params.end()) throw std::invalid_argument(row.file + ":" + std::to_string(row.line) + ": no " + name);
  return std::stoll(it->second);
}

// A metric that is a count (tile edges, split-K), or `fallback` when absent.
std::int64_t count_metric(const ResultRow& row, const std::string& name, std::int64_t fallback) {
  const auto value = row.metric(name);
  return value ? static_cast<std::int64_t>(std::llround(*value)) : fallback;
}

}  // namespace

std::vector<SweepPoint> sweep_points(const std::vector<ResultRow>& rows, int sm_count) {
  std::vector<SweepPoint> points;
  for (const auto& row : rows) {
    const auto tflops = row.metrics.find("tflops");
    if (row.status != RowStatus::ok || tflops == row.metrics.end() || !row.metrics.count("tile_m") ||
        !row.metrics.count("tile_n"))
      continue;
    GemmProblem p;
    p.m = integer_param(row, "m"), p.n = integer_param(row, "n"), p.k = integer_param(row, "k");
    p.tile = {count_metric(row, "tile_m", 0), count_metric(row, "tile_n", 0)};
    p.sm_count = sm_count;
    p.split_k = static_cast<int>(count_metric(row, "split_k", 1));
    p.batch = row.params.count("batch") ? integer_param(row, "batch") : 1;
    const GemmPrediction r = predict_gemm(p);
    points.push_back({r.tile_efficiency, r.wave_efficiency, tflops->second});
  }
  return points;
}

std::vector<double> power_capped_predictions(const std::vector<SweepPoint>& points, double recovery) {
  std::vector<double> predicted;
  for (const auto& p : points)
    predicted.push_back(p.tile_efficiency * power_capped_wave_efficiency(p.wave_efficiency, recovery));
  return predicted;
}

std::vector<double> relative_errors(const std::vector<SweepPoint>& points, double recovery) {
  if (points.empty()) return {};
  const std::vector<double> predicted = power_capped_predictions(points, recovery);
  std::vector<double> measured;
  for (const auto& p : points) measured.push_back(p.tflops);
  const double mean_predicted = mean(predicted), mean_measured = mean(measured);
  std::vector<double> errors;
  for (std::size_t i = 0; i < points.size(); ++i)
    errors.push_back((predicted[i] / mean_predicted) / (measured[i] / mean_measured) - 1);
  return errors;
}

double rms(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (double v : values) sum += v * v;
  return std::sqrt(sum / static_cast<double>(values.size()));
}

double max_abs(const std::vector<double>& values) {
  double most = 0;
  for (double v : values) most = std::max(most, std::abs(v));
  return most;
}

PowerCapFit fit_power_cap_recovery(const std::vector<SweepPoint>& points) {
  if (points.size() < 2) throw std::invalid_argument("fitting the power-cap recovery needs at least 2 points");
  constexpr int kSteps = 1000;
  PowerCapFit best;
  double best_rms = 0;
  for (int step = 0; step <= kSteps; ++step) {
    const double r = static_cast<double>(step) / kSteps;
    std::vector<double> errors = relative_errors(points, r);
    const double e = rms(errors);
    if (step == 0 || e < best_rms) best_rms = e, best = {r, std::move(errors)};
  }
  return best;
}

}  // namespace redline
