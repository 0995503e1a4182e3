#include "harness/train/recompute_verdict.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness/core/units.hpp"
#include "harness/measure/saturation.hpp"

namespace redline {
namespace {


// The largest batch every mode with results ran ok.
std::optional<std::int64_t> common_batch(const std::vector<ModeSweep>& modes) {
  std::optional<std::int64_t> best;
  for (const auto& [batch, value] : modes.front().tokens_per_s) {
    const bool everywhere = std::all_of(modes.begin(), modes.end(),
                                        [&](const ModeSweep& m) { return m.tokens_per_s.count(batch) > 0; });
    if (everywhere) best = batch;
  }
  return best;
}

std::string slowdown_line(const std::vector<ModeSweep>& modes, const ModeSweep& none, std::int64_t batch) {
  std::string text = "at micro-batch " + std::to_string(batch) + ":";
  for (const ModeSweep& m : modes) {
    if (m.mode == Recompute::none) continue;
    const double slower = none.tokens_per_s.at(batch) / m.tokens_per_s.at(batch) - 1;
    text += std::string(" ") + recompute_name(m.mode) + " " + format_percent(slower) + " slower than none;";
  }
  text.pop_back();
  return text;
}

std::string memory_line(const std::vector<ModeSweep>& modes, const ModeSweep& none, std::int64_t batch) {
  std::string text = "at micro-batch " + std::to_string(batch) + ":";
  for (const ModeSweep& m : modes) {
    if (m.mode == Recompute::none) continue;
    text += std::string(" ") + recompute_name(m.mode);
    if (auto p = none.predicted_peak_bytes.find(batch), q = m.predicted_peak_bytes.find(batch);
        p != none.predicted_peak_bytes.end() && q != m.predicted_peak_bytes.end())
      text += " frees " + format_gib(p->second - q->second) + " predicted";
    if (auto p = none.measured_peak_bytes.find(batch), q = m.measured_peak_bytes.find(batch);
        p != none.measured_peak_bytes.end() && q != m.measured_peak_bytes.end())
      text += ", " + format_gib(p->second - q->second) + " measured";
    text += ";";
  }
  text.pop_back();
  return text;
}

std::string largest_line(const std::vector<ModeSweep>& modes) {
  std::string text;
  for (const ModeSweep& m : modes)
    text += std::string(text.empty() ? "" : "; ") + recompute_name(m.mode) + " " +
            (m.largest_fit ? std::to_string(*m.largest_fit) : std::string("none ran")) +
            (m.saturation ? " (saturates at " + std::to_string(*m.saturation) + ")" : "");
  return text;
}

struct Best {
  const ModeSweep* mode = nullptr;
  std::int64_t batch = 0;
  double tokens_per_s = 0;
};

Best best_of(const ModeSweep& m) {
  Best best{&m, 0, 0};
  for (const auto& [batch, value] : m.tokens_per_s)
    if (value > best.tokens_per_s) best = {&m, batch, value};
  return best;
}

}  // namespace

ModeSweep mode_sweep(Recompute mode, const std::vector<Row>& rows, std::optional<std::int64_t> largest_fit) {
  ModeSweep m;
  m.mode = mode;
  std::vector<ThroughputPoint> points;
  for (const Row& row : rows) {
    const auto batch = parameter_number(row.param_value("batch_size").value_or(""));
    const auto tokens = row.metric_value("tokens_per_s");
    if (row.status != RowStatus::ok || !batch || !tokens || std::isnan(*tokens)) continue;
    const auto b = static_cast<std::int64_t>(*batch);
    m.tokens_per_s[b] = *tokens;
    points.push_back({*batch, *tokens});
    if (const auto v = row.metric_value("measured_peak_bytes"); v && !std::isnan(*v)) m.measured_peak_bytes[b] = *v;
    if (const auto v = row.metric_value("predicted_peak_bytes"); v && !std::isnan(*v)) m.predicted_peak_bytes[b] = *v;
  }
  m.largest_fit = largest_fit;
  if (const Saturation sat = analyze_saturation(points); sat.point)
    m.saturation = static_cast<std::int64_t>(sat.point->size);
  return m;
}

std::vector<std::pair<std::string, std::string>> recompute_verdict(const std::vector<ModeSweep>& modes) {
  std::vector<std::pair<std::string, std::string>> lines;
  std::vector<ModeSweep> ran;
  for (const ModeSweep& m : modes)
    if (!m.tokens_per_s.empty()) ran.push_back(m);
  if (ran.empty()) return {{"verdict", "no recompute mode ran a micro-batch"}};
  const auto none = std::find_if(ran.begin(), ran.end(), [](const ModeSweep& m) { return m.mode == Recompute::none; });
  const auto batch = common_batch(ran);
  if (none != ran.end() && batch && ran.size() > 1) {
    lines.emplace_back("slowdown", slowdown_line(ran, *none, *batch));
    lines.emplace_back("memory freed", memory_line(ran, *none, *batch));
  }
  lines.emplace_back("largest batch", largest_line(modes));
  Best best;
  for (const ModeSweep& m : ran)
    if (const Best b = best_of(m); b.tokens_per_s > best.tokens_per_s) best = b;
  std::string text = std::string(recompute_name(best.mode->mode)) + " at micro-batch " + std::to_string(best.batch) +
                     ": " + format_number(best.tokens_per_s, 0) + " tokens/s";
  if (none != ran.end() && best.mode->mode != Recompute::none) {
    const Best plain = best_of(*none);
    text += ", " + format_percent(best.tokens_per_s / plain.tokens_per_s - 1) + " more than none's best (" +
            format_number(plain.tokens_per_s, 0) + " at " + std::to_string(plain.batch) + ")";
    // Freed memory is the cause only where none could not run that batch;
    // at a batch none ran too, recompute was simply measured faster there.
    const bool beyond_none = none->tokens_per_s.count(best.batch) == 0 &&
                             (!none->largest_fit || best.batch > *none->largest_fit);
    text += beyond_none ? ": the memory it frees buys a batch that wins back its recompute"
                        : ": at a batch none ran too, so not through the memory it frees";
  } else if (best.mode->mode == Recompute::none && ran.size() > 1) {
    text += ": recompute does not pay on this GPU for this shape (its larger batches do not win back its cost)";
  }
  lines.emplace_back("best", text);
  return lines;
}

}  // namespace redline
