// attention_bench sweep's flags checked (each bad value a UsageError naming
// the flag, exit 2) before any GPU is looked for, in a build with or without
// the GPU paths alike.
#pragma once

#include <vector>

#include "bench/attention/subcommands.hpp"
#include "harness/attention/fused_kernels.hpp"
#include "harness/measure/measurement.hpp"

namespace redline::attention {

enum class AttentionPath { unfused, cudnn };
const char* path_name(AttentionPath path);  // "unfused", "cudnn"

struct CheckedSweep {
  LayoutGrid grid;  // grid.gpu: --gpu's, else H100's until the device is known
  std::vector<AttentionPath> paths;
  std::vector<AttentionDirection> directions;
  MeasurementPolicy policy;
  double first_warmup = 1;
  int device = 0;
  bool unfused_gemms = false;  // each unfused GEMM alone too
};

CheckedSweep checked_sweep(const SweepFlags& f);

}  // namespace redline::attention
