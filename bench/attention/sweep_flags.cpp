#include "bench/attention/sweep_flags.hpp"

#include <algorithm>
#include <sstream>

#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/measure/policy_flags.hpp"

namespace redline::attention {
namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  return parts;
}

std::vector<AttentionPath> paths_of(const std::string& text) {
  if (text == "all") return {AttentionPath::unfused, AttentionPath::cudnn};
  std::vector<AttentionPath> paths;
  for (const std::string& part : split_list(text)) {
    AttentionPath path;
    if (part == "unfused") path = AttentionPath::unfused;
    else if (part == "cudnn") path = AttentionPath::cudnn;
    else throw UsageError("--path", text, "must be unfused, cudnn, a comma list of them, or all");
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
  }
  if (paths.empty()) throw UsageError("--path", text, "must be unfused, cudnn, a comma list of them, or all");
  return paths;
}

std::vector<AttentionDirection> directions_of(const std::string& text) {
  std::vector<AttentionDirection> directions;
  for (const std::string& part : split_list(text)) {
    AttentionDirection direction;
    if (part == "fwd") direction = AttentionDirection::forward;
    else if (part == "bwd") direction = AttentionDirection::backward;
    else throw UsageError("--direction", text, "must be fwd, bwd or fwd,bwd");
    if (std::find(directions.begin(), directions.end(), direction) == directions.end())
      directions.push_back(direction);
  }
  if (directions.empty()) throw UsageError("--direction", text, "must be fwd, bwd or fwd,bwd");
  return directions;
}

}  // namespace

const char* path_name(AttentionPath path) { return path == AttentionPath::unfused ? "unfused" : "cudnn"; }

CheckedSweep checked_sweep(const SweepFlags& f) {
  CheckedSweep c;
  c.grid = layout_grid(f.layout, "H100", true);
  c.paths = paths_of(f.path);
  c.directions = directions_of(f.direction);
  c.policy = policy_of(f.policy);
  c.first_warmup = positive_seconds("--first-warmup", f.first_warmup);
  c.device = static_cast<int>(parse_count_between("--device", f.device, 0, 1024));
  if (c.grid.dtype == GemmDtype::fp8_e4m3 && c.paths == std::vector<AttentionPath>{AttentionPath::unfused})
    throw UsageError("--path", f.path, "the unfused path runs bf16 and fp16 only; FP8 runs on cudnn");
  c.unfused_gemms = f.unfused_gemms;
  const bool runs_unfused = std::find(c.paths.begin(), c.paths.end(), AttentionPath::unfused) != c.paths.end();
  if (c.unfused_gemms && !runs_unfused)
    throw UsageError("--path", f.path, "--unfused-gemms times the unfused path's GEMMs: the path must include unfused");
  if (c.unfused_gemms && c.grid.dtype == GemmDtype::fp8_e4m3)
    throw UsageError("--dtype", f.layout.dtype, "--unfused-gemms: the unfused path runs bf16 and fp16 only");
  return c;
}

}  // namespace redline::attention
