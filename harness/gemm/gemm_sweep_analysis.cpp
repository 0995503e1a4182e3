#include "harness/gemm/gemm_sweep_analysis.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "harness/gpu/gemm_model.hpp"

namespace redline {
namespace {

constexpr double kQuantizationFree = 0.99;

std::int64_t dim_of(const Row& row, const std::string& dim) {
  return std::stoll(row.param_value(dim).value_or("0"));
}

// Rows on one curve share every parameter but the swept dimension.
std::string curve_key(const Row& row, const std::string& swept_dim) {
  std::string key;
  for (const auto& [name, value] : row.params)
    if (name != swept_dim) key += name + "=" + value + ";";
  return key;
}


// The efficiency at the power cap (harness/gpu/gemm_model.hpp), from the
// row's own tile and wave efficiencies; nullopt without them.
std::optional<double> power_capped_of(const Row& row) {
  const auto tile = row.metric_value("tile_efficiency"), wave = row.metric_value("wave_efficiency");
  if (!tile || !wave || !(*wave > 0 && *wave <= 1)) return std::nullopt;
  return *tile * power_capped_wave_efficiency(*wave);
}

std::optional<double> fixed_clock_of(const Row& row) { return row.metric_value("predicted_efficiency"); }

// The curve's quantization-free level by one efficiency (the header's rule):
// the best TFLOPS among points it calls free of quantization, else the best
// point's TFLOPS over its efficiency. 0 when nothing was measured.
template <typename Efficiency>
double curve_level(const std::vector<Row>& rows, const std::vector<std::size_t>& members, Efficiency efficiency_of) {
  double level = 0, fallback = 0, best_tflops = 0;
  for (std::size_t i : members) {
    const double tflops = *rows[i].metric_value("tflops");
    const auto efficiency = efficiency_of(rows[i]);
    if (efficiency && *efficiency >= kQuantizationFree) level = std::max(level, tflops);
    if (tflops > best_tflops) {
      best_tflops = tflops;
      fallback = efficiency && *efficiency > 0 ? tflops / *efficiency : tflops;
    }
  }
  return level > 0 ? level : fallback;
}

}  // namespace

// NaN tflops means not measured (report.hpp).
bool measured_gemm_row(const Row& row) {
  const auto tflops = row.metric_value("tflops");
  return row.status == RowStatus::ok && tflops && std::isfinite(*tflops);
}

std::string swept_dimension(const std::vector<Row>& rows) {
  std::string best = "n";
  std::size_t most = 0;
  for (const char* dim : {"n", "m", "k"}) {
    std::set<std::string> values;
    for (const auto& row : rows)
      if (const auto v = row.param_value(dim)) values.insert(*v);
    if (values.size() > most) most = values.size(), best = dim;
  }
  return best;
}

std::vector<QuantizationLoss> analyze_gemm_sweep(std::vector<Row>& rows, const std::string& swept_dim) {
  std::map<std::string, std::vector<std::size_t>> curves;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (measured_gemm_row(rows[i])) curves[curve_key(rows[i], swept_dim)].push_back(i);

  std::vector<QuantizationLoss> losses;
  for (auto& [key, members] : curves) {
    const double level = curve_level(rows, members, fixed_clock_of);
    if (level <= 0) continue;
    const double capped_level = curve_level(rows, members, power_capped_of);

    std::sort(members.begin(), members.end(),
              [&](std::size_t a, std::size_t b) { return dim_of(rows[a], swept_dim) < dim_of(rows[b], swept_dim); });
    for (std::size_t pos = 0; pos < members.size(); ++pos) {
      Row& row = rows[members[pos]];
      const double tflops = *row.metric_value("tflops");
      if (const auto efficiency = fixed_clock_of(row)) row.metric("predicted_tflops", level * *efficiency);
      if (const auto capped = power_capped_of(row)) row.metric("predicted_tflops_power_capped", capped_level * *capped);
      const double loss = 1 - tflops / level;
      row.metric("loss_pct", 100 * loss);
      if (loss <= 1 - kQuantizationLossThreshold) continue;
      QuantizationLoss finding{members[pos], loss, std::nullopt, 0};
      for (std::size_t next = pos + 1; next < members.size(); ++next) {
        // Repeats of the same size (repetitions) are no larger size.
        if (dim_of(rows[members[next]], swept_dim) <= dim_of(row, swept_dim)) continue;
        const double next_tflops = *rows[members[next]].metric_value("tflops");
        if (next_tflops >= kQuantizationLossThreshold * level) {
          finding.recovered_by = members[next];
          finding.measured_gain = next_tflops / tflops - 1;
          break;
        }
      }
      losses.push_back(finding);
    }
  }
  std::sort(losses.begin(), losses.end(), [](const auto& a, const auto& b) { return a.row < b.row; });
  return losses;
}

}  // namespace redline
