#include "bench/train/step_flags.hpp"

#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline::train {
namespace {

AttentionChoice attention_of(const std::string& text) {
  if (const auto choice = parse_attention_choice(text)) return *choice;
  throw UsageError("--attention", text, "must be cudnn or unfused");
}

// --gpu NAME, checked against the datasheet table before any GPU is looked for.
std::optional<GpuPeaks> datasheet_of(const std::string& name) {
  if (name.empty()) return std::nullopt;
  const auto peaks = lookup_gpu_peaks(name);
  if (!peaks) throw UsageError("--gpu", name, "unknown GPU (known: " + known_gpu_models() + ")");
  return peaks;
}

int count_of(const char* flag, const std::string& text, std::int64_t lo, std::int64_t hi) {
  return static_cast<int>(parse_count_between(flag, text, lo, hi));
}

}  // namespace

std::vector<Recompute> recompute_modes(const std::string& text, bool all_allowed) {
  if (all_allowed && text == "all") return {Recompute::none, Recompute::selective, Recompute::full};
  if (const auto mode = parse_recompute(text)) return {*mode};
  throw UsageError("--recompute", text, all_allowed ? "must be none, selective, full or all"
                                                    : "must be none, selective or full");
}

CheckedRun checked_run(const RunFlags& f) {
  CheckedRun c;
  c.config = model_of(f.model);
  c.seq = seq_of(f.model);
  c.mbs = mbs_of(f.model);
  c.recompute = recompute_modes(f.recompute, false).front();
  c.attention = attention_of(f.attention);
  require_countable(c.config, c.seq, "--mbs", c.mbs, c.attention);
  c.steps = count_of("--steps", f.steps, 1, 1000000);
  c.warmup = static_cast<int>(parse_count_between("--warmup", f.warmup, 0, 1000000));
  c.ga = count_of("--ga", f.ga, 1, 1 << 20);
  c.device = static_cast<int>(parse_count_between("--device", f.device, 0, 1024));
  c.datasheet = datasheet_of(f.gpu);
  return c;
}

CheckedSweep checked_sweep(const SweepFlags& f) {
  CheckedSweep c;
  c.config = model_of(f.model);
  c.seq = seq_of(f.model);
  c.modes = recompute_modes(f.recompute, true);
  c.attention = attention_of(f.attention);
  c.steps = count_of("--steps", f.steps, 1, 1000000);
  c.warmup = static_cast<int>(parse_count_between("--warmup", f.warmup, 0, 1000000));
  if (f.mbs)
    throw UsageError("--mbs", *f.mbs,
                     "sweep picks the micro-batch itself (1, 2, 4, ... up to --max-mbs): bound it "
                     "with --max-mbs, or time one micro-batch with run --mbs");
  c.max_mbs = parse_count_between("--max-mbs", f.max_mbs, 1, 1 << 20);
  // Every trial, up to the largest, must be one `run` accepts.
  require_countable(c.config, c.seq, "--max-mbs", c.max_mbs, c.attention);
  c.device = static_cast<int>(parse_count_between("--device", f.device, 0, 1024));
  datasheet_of(f.gpu);  // each trial takes it; a bad name is refused here, once
  c.gpu_memory_bytes = gpu_memory_bytes_of(f.gpu_memory);
  return c;
}

}  // namespace redline::train
