// train_step_bench's subcommands, one file each: memory.cpp (the memory
// model, no GPU) and, where the CUDA training stack is built, run.cpp and
// sweep.cpp. Each returns the exit status.
#pragma once

#include <optional>
#include <string>

#include "bench/train/model_flags.hpp"
#include "harness/report/output.hpp"

namespace redline::train {

struct MemoryFlags {
  ModelFlags model;
  std::string recompute = "all", gpu_memory;
  OutputOptions output;
};

struct RunFlags {
  ModelFlags model;
  std::string recompute = "none", attention = "cudnn", steps = "10", warmup = "3", ga = "1", device = "0", gpu;
  bool check = false;
  bool no_split = false;  // no kernel split and no calls timed alone (sweep's trials)
  OutputOptions output;
};

struct SweepFlags {
  ModelFlags model;
  std::string recompute = "all", attention = "cudnn", steps = "10", warmup = "3", max_mbs = "1024", device = "0",
              gpu, gpu_memory;
  std::optional<std::string> mbs;  // refused: sweep picks the micro-batch (1, 2, 4, ... --max-mbs)
  OutputOptions output;
};

int run_memory(const MemoryFlags& f);
int run_step(const RunFlags& f);
// `self`: this program's path, run once per trial by the batch-sweep engine.
int run_sweep(const SweepFlags& f, const std::string& self);

}  // namespace redline::train
