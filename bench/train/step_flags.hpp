// train_step_bench run's and sweep's flags checked (each bad value a
// UsageError naming the flag, exit 2) before any GPU is looked for.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "bench/train/subcommands.hpp"
#include "harness/gpu/gpu_peaks.hpp"
#include "harness/train/activation_memory.hpp"

namespace redline::train {

struct CheckedRun {
  ModelConfig config;
  std::int64_t seq = 0, mbs = 0;
  Recompute recompute = Recompute::none;
  AttentionChoice attention = AttentionChoice::cudnn;
  int steps = 10, warmup = 3, ga = 1, device = 0;
  std::optional<GpuPeaks> datasheet;  // --gpu's; nullopt: the device's own
};
CheckedRun checked_run(const RunFlags& f);

struct CheckedSweep {
  ModelConfig config;
  std::int64_t seq = 0;
  std::vector<Recompute> modes;
  AttentionChoice attention = AttentionChoice::cudnn;
  int steps = 10, warmup = 3, device = 0;
  std::int64_t max_mbs = 1024;
  std::optional<std::int64_t> gpu_memory_bytes;
};
CheckedSweep checked_sweep(const SweepFlags& f);

// "none", "selective", "full" or "all" (every mode) for --recompute.
std::vector<Recompute> recompute_modes(const std::string& text, bool all_allowed);

// Throws CannotRun (exit 77) when this build or machine cannot train on the
// GPU: built without the CUDA training stack, or no usable GPU `device`.
void require_training_gpu(int device);

}  // namespace redline::train
