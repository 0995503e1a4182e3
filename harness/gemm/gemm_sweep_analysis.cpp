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

// NaN tflops means not measured (report.hpp).
bool measured(const Row& row) {
  const auto tflops = row.metric_value("tflops");
  return row.status == "ok" && tflops && std::isfinite(*tflops);
}

}  // namespace

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
    if (measured(rows[i])) curves[curve_key(rows[i], swept_dim)].push_back(i);

  std::vector<QuantizationLoss> losses;
  for (auto& [key, members] : curves) {
    double level = 0, fallback = 0, best_tflops = 0;
    for (std::size_t i : members) {
      const double tflops = *rows[i].metric_value("tflops");
      const auto efficiency = rows[i].metric_value("predicted_efficiency");
      if (efficiency && *efficiency >= kQuantizationFree) level = std::max(level, tflops);
      // Fallback: the best measured point over its own predicted efficiency.
      if (tflops > best_tflops) {
        best_tflops = tflops;
        fallback = efficiency && *efficiency > 0 ? tflops / *efficiency : tflops;
      }
    }
    if (level == 0) level = fallback;
    if (level <= 0) continue;

    std::sort(members.begin(), members.end(),
              [&](std::size_t a, std::size_t b) { return dim_of(rows[a], swept_dim) < dim_of(rows[b], swept_dim); });
    for (std::size_t pos = 0; pos < members.size(); ++pos) {
      Row& row = rows[members[pos]];
      const double tflops = *row.metric_value("tflops");
      if (const auto efficiency = row.metric_value("predicted_efficiency"))
        row.metric("predicted_tflops", level * *efficiency);
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
