#include "harness/attention/sweep_analysis.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "harness/attention/layout_ranking.hpp"
#include "harness/core/units.hpp"
#include "harness/measure/saturation.hpp"

namespace redline {
namespace {

// The parameters that name a layout at one batch: every one but path and direction.
const char* const kLayoutParams[] = {"hidden", "heads", "kv_heads", "tp", "head_dim", "batch", "seq", "causal", "dtype"};

std::string param(const Row& row, const char* name) { return row.param_value(name).value_or(""); }

std::string layout_key(const Row& row) {
  std::string key;
  for (const char* name : kLayoutParams) key += param(row, name) + ";";
  return key;
}

std::string layout_label(const Row& row) {
  std::string label = "a_q=" + param(row, "heads") + " a_kv=" + param(row, "kv_heads") + " d=" + param(row, "head_dim");
  return param(row, "tp") == "1" ? label : label + " tp=" + param(row, "tp");
}

bool ok_with_time(const Row& row) {
  return row.status == RowStatus::ok && row.metric_value("time_us") && row.metric_value("tflops");
}

double flop_of(const Row& row) { return *row.metric_value("tflops") * 1e12 * *row.metric_value("time_us") * 1e-6; }

// The ok row of one layout for a path and direction, if any.
const Row* part(const std::vector<const Row*>& rows, const std::string& path, const std::string& direction) {
  for (const Row* row : rows)
    if (param(*row, "path") == path && param(*row, "direction") == direction && ok_with_time(*row)) return row;
  return nullptr;
}

Row block_row(const Row& like, const std::string& path, const std::string& direction,
              const std::vector<const Row*>& parts) {
  Row row;
  for (const char* name : kLayoutParams) row.param(name, param(like, name));
  row.param("path", "block_" + path).param("direction", direction);
  double time_us = 0, flop = 0;
  for (const Row* p : parts) {
    time_us += *p->metric_value("time_us");
    flop += flop_of(*p);
  }
  row.metric("time_us", time_us).metric("tflops", flop / (time_us * 1e-6) / 1e12);
  row.note = "projections + " + path + " attention, " + (direction == "train" ? "forward and backward" : "forward") +
             ": the parts' median times summed";
  return row;
}

std::map<std::string, std::vector<const Row*>> rows_by_layout(const std::vector<Row>& rows) {
  std::map<std::string, std::vector<const Row*>> groups;
  for (const Row& row : rows)
    if (!param(row, "path").starts_with("block_")) groups[layout_key(row)].push_back(&row);
  return groups;
}

const LayoutPrediction* prediction_of(const Row& row, const std::vector<LayoutPrediction>& predictions) {
  for (const auto& p : predictions)
    if (std::to_string(p.layout.heads) == param(row, "heads") &&
        std::to_string(p.layout.kv_heads) == param(row, "kv_heads") && std::to_string(p.layout.tp) == param(row, "tp"))
      return &p;
  return nullptr;
}

// Why a layout's cuDNN rows did not run, from their notes; nullopt when they ran.
std::optional<std::string> cudnn_missing(const std::vector<Row>& rows, const Row& block) {
  for (const Row& row : rows)
    if (layout_key(row) == layout_key(block) && param(row, "path") == "cudnn" && row.status != RowStatus::ok)
      return "cuDNN " + param(row, "direction") + " " + to_string(row.status) + ": " + row.note;
  return std::nullopt;
}

// The best block row per layout at `batch`: the faster path's, train before fwd.
std::vector<Row*> best_blocks(std::vector<Row>& rows, const std::string& batch) {
  std::map<std::string, Row*> best;
  const bool any_train = std::any_of(rows.begin(), rows.end(), [&](const Row& r) {
    return param(r, "path").starts_with("block_") && param(r, "direction") == "train" && param(r, "batch") == batch;
  });
  for (Row& row : rows) {
    if (!param(row, "path").starts_with("block_") || param(row, "batch") != batch) continue;
    if (param(row, "direction") != (any_train ? "train" : "fwd")) continue;
    Row*& slot = best[layout_key(row)];
    if (!slot || *row.metric_value("tflops") > *slot->metric_value("tflops")) slot = &row;
  }
  std::vector<Row*> out;
  for (auto& [key, row] : best) out.push_back(row);
  return out;
}

std::string largest_batch(const std::vector<Row>& rows) {
  std::optional<double> largest;
  std::string text;
  for (const Row& row : rows)
    if (param(row, "path").starts_with("block_"))
      if (const auto b = parameter_number(param(row, "batch")); b && (!largest || *b > *largest)) largest = b, text = param(row, "batch");
  return text;
}

std::string failed_part(const Row& row) {
  std::string text;
  for (const std::string& word : {param(row, "path"), param(row, "direction"), to_string(row.status)})
    if (!word.empty()) text += (text.empty() ? "" : " ") + word;
  return text + (row.note.empty() ? "" : ": " + row.note);
}

// Why a layout measured at `batch` has no block of `direction` ("train" or
// "fwd"): the first of its rows that did not run ok, a measured part (path
// and direction) before a whole path refused up front (FP8 on the unfused
// path, a row with no direction), which says less about this layout. A row
// with no path is the layout itself refused (infeasible).
std::string why_no_block(const std::vector<const Row*>& group, const std::string& direction) {
  const Row* path_refused = nullptr;
  for (const Row* row : group) {
    const std::string path = param(*row, "path"), row_direction = param(*row, "direction");
    if (path == "unfused_gemm" || row->status == RowStatus::ok) continue;
    if (!path.empty() && row_direction.empty()) {
      if (!path_refused) path_refused = row;
      continue;
    }
    if (direction == "fwd" && !row_direction.empty() && row_direction != "fwd") continue;
    return failed_part(*row);
  }
  return path_refused ? failed_part(*path_refused) : "no path ran both the projections and the attention";
}

// One line for each layout measured at `batch` that has no block in
// `blocks` (its parts did not all run), so no layout leaves the ranking
// unsaid.
std::vector<std::pair<std::string, std::string>> unranked_layouts(const std::vector<Row>& rows,
                                                                 const std::vector<Row*>& blocks,
                                                                 const std::string& batch, const std::string& direction) {
  std::vector<std::pair<std::string, std::string>> lines;
  for (const auto& [key, group] : rows_by_layout(rows)) {
    if (param(*group.front(), "batch") != batch) continue;
    const bool ranked = std::any_of(blocks.begin(), blocks.end(), [&](const Row* b) { return layout_key(*b) == key; });
    if (!ranked)
      lines.emplace_back("not ranked", layout_label(*group.front()) + ": no " +
                                           (direction == "train" ? "forward + backward" : "forward") +
                                           " block (" + why_no_block(group, direction) + ")");
  }
  return lines;
}

// Each block's attention parts as factors of its own, measured: a part's
// TFLOPS as a share of the fastest layout's same direction at this batch
// (either path). The model has no factor for some losses (cuDNN's d = 256
// backward ran at 72% of d = 128's on an H200 at batch 1); this names the direction
// that lost where the model cannot say why.
void add_measured_parts(std::vector<RankCandidate>& candidates, const std::vector<Row*>& blocks,
                        const std::vector<Row>& rows) {
  const auto groups = rows_by_layout(rows);
  const auto parts_of = [&](const Row& block) {
    std::vector<std::pair<std::string, const Row*>> parts;  // {direction, row}
    const auto group = groups.find(layout_key(block));
    if (group == groups.end()) return parts;
    const std::string path = param(block, "path").substr(6);  // "block_cudnn" -> "cudnn"
    for (const char* direction : {"fwd", "bwd"}) {
      if (std::string(direction) == "bwd" && param(block, "direction") != "train") continue;
      if (const Row* p = part(group->second, path, direction)) parts.emplace_back(direction, p);
    }
    return parts;
  };
  std::map<std::string, double> fastest;
  for (const Row* block : blocks)
    for (const auto& [direction, p] : parts_of(*block)) fastest[direction] = std::max(fastest[direction], *p->metric_value("tflops"));
  for (std::size_t i = 0; i < blocks.size(); ++i)
    for (const auto& [direction, p] : parts_of(*blocks[i])) {
      const double tflops = *p->metric_value("tflops");
      if (!(fastest[direction] > 0)) continue;
      candidates[i].factors.push_back({"attention " + direction, tflops / fastest[direction],
                                       "measured " + param(*p, "path") + " " + format_number(tflops, 1) +
                                           " TFLOPS, the fastest layout's " + format_number(fastest[direction], 1)});
    }
}

}  // namespace

bool is_attention_path_row(const Row& row) {
  const std::string path = param(row, "path");
  return path == "unfused" || path == "cudnn";
}

std::vector<Row> attention_block_rows(const std::vector<Row>& rows) {
  std::vector<Row> blocks;
  for (const auto& [key, group] : rows_by_layout(rows)) {
    const Row* proj_fwd = part(group, "projections", "fwd");
    const Row* proj_bwd = part(group, "projections", "bwd");
    for (const char* path : {"unfused", "cudnn"}) {
      const Row* fwd = part(group, path, "fwd");
      const Row* bwd = part(group, path, "bwd");
      if (!fwd || !proj_fwd) continue;
      blocks.push_back(block_row(*group.front(), path, "fwd", {proj_fwd, fwd}));
      if (bwd && proj_bwd) blocks.push_back(block_row(*group.front(), path, "train", {proj_fwd, fwd, proj_bwd, bwd}));
    }
  }
  return blocks;
}

std::vector<std::pair<std::string, std::string>> attention_recommendation(
    std::vector<Row>& rows, const std::vector<LayoutPrediction>& predictions) {
  const std::string batch = largest_batch(rows);
  std::vector<Row*> blocks = best_blocks(rows, batch);
  if (blocks.empty()) return {};
  std::vector<RankCandidate> candidates;
  for (Row* block : blocks) {
    // Ranked by the block's time: the layouts of one hidden size differ in FLOPs under GQA.
    RankCandidate c{layout_label(*block) + " on " + param(*block, "path").substr(6), *block->metric_value("time_us"), {}};
    if (const LayoutPrediction* p = prediction_of(*block, predictions)) c.factors = p->block_factors;
    if (const auto missing = cudnn_missing(rows, *block)) c.factors.push_back({"cudnn_missing", 1, *missing});
    candidates.push_back(std::move(c));
  }
  add_measured_parts(candidates, blocks, rows);
  std::vector<std::pair<std::string, std::string>> lines;
  const std::string what = param(*blocks.front(), "direction") == "train" ? "forward + backward" : "forward";
  for (const RankedLayout& r : rank_layouts(candidates)) {
    blocks[r.index]->metric("rank", r.rank);
    const std::string figure = format_number(*blocks[r.index]->metric_value("tflops"), 1) + " TFLOPS";
    lines.emplace_back(r.rank == 1 ? "recommend" : "rank " + std::to_string(r.rank),
                       candidates[r.index].label + ": " + figure +
                           (r.rank == 1 ? " (the attention block, " + what + ", batch " + batch + ")"
                                        : ", " + ranking_verdict(r)));
  }
  for (auto& line : unranked_layouts(rows, blocks, batch, param(*blocks.front(), "direction")))
    lines.push_back(std::move(line));
  return lines;
}

std::vector<std::pair<std::string, std::string>> attention_saturation(const std::vector<Row>& rows) {
  // Per layout (without the batch), path and direction.
  std::map<std::string, std::pair<std::string, std::vector<ThroughputPoint>>> series;
  for (const Row& row : rows) {
    if (!ok_with_time(row) || !is_attention_path_row(row)) continue;
    const auto batch = parameter_number(param(row, "batch"));
    const auto heads = parameter_number(param(row, "heads"));
    const auto tp = parameter_number(param(row, "tp"));
    if (!batch || !heads || !tp) continue;
    const std::string label = layout_label(row) + " " + param(row, "path") + " " + param(row, "direction");
    std::string key = label + ";" + param(row, "seq") + ";" + param(row, "causal") + ";" + param(row, "dtype");
    auto& [name, points] = series[key];
    name = label;
    points.push_back({*batch * *heads / *tp, *row.metric_value("tflops")});
  }
  std::vector<std::pair<std::string, std::string>> lines;
  for (const auto& [key, entry] : series) {
    const auto& [label, points] = entry;
    if (points.size() < 2) continue;
    const Saturation sat = analyze_saturation(points);
    if (!sat.fraction) continue;
    const std::string reason = plateau_reason(sat, SaturationOptions{}, "batch x heads");
    const std::string best = format_number(sat.best->throughput, 1) + " TFLOPS at batch x heads = " +
                             format_number(sat.best->size, 0);
    lines.emplace_back("saturation " + label,
                       sat.point ? "batch x heads = " + format_number(sat.point->size, 0) + " (" +
                                       format_number(sat.point->throughput, 1) + " TFLOPS): " + reason + "; best " + best
                                 : "not reached: " + reason + "; batch x heads = " + format_number(sat.fraction->size, 0) +
                                       " reaches 90% of the best (" + best + ")");
  }
  return lines;
}

}  // namespace redline
