// The head layouts attention_bench's plan and sweep look at, from the flags
// they share: --hidden, --heads LIST|auto, --kv-heads LIST, --tp, --seq,
// --batch, --gpu, --dtype, --causal. Checked here, so both subcommands refuse
// the same bad input with the same message (exit 2).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "harness/attention/attention_model.hpp"
#include "harness/attention/head_layout.hpp"
#include "harness/gpu/gemm_dtype.hpp"
#include "harness/gpu/gpu_peaks.hpp"

namespace redline::attention {

struct LayoutFlags {
  std::string hidden, heads = "auto", kv_heads, tp = "1", seq = "4096", batch = "1", gpu, dtype = "bf16";
  bool causal = false;
};

struct LayoutGrid {
  std::int64_t hidden = 0;
  std::vector<HeadLayout> layouts;    // every --heads x --kv-heads pair, feasible or not
  std::vector<std::int64_t> batches;  // plan: one; sweep: an axis
  std::int64_t seq = 0;
  GemmDtype dtype = GemmDtype::bf16;
  bool causal = false;
  GpuPeaks gpu;  // the model's GPU: --gpu, or the one measured
};

// `default_gpu`: the GPU name when --gpu is empty ("H100" for plan; the
// device's own name for sweep). `batch_axis`: whether --batch may be a list.
void add_layout_flags(CLI::App& sub, LayoutFlags& flags, bool batch_axis);
LayoutGrid layout_grid(const LayoutFlags& flags, const std::string& default_gpu, bool batch_axis);

// "fp8" or "fp8_e4m3" -> fp8_e4m3; bf16, fp16. UsageError naming --dtype otherwise.
GemmDtype parse_attention_dtype(const std::string& text);
const char* attention_dtype_name(GemmDtype dtype);  // "bf16", "fp16", "fp8"

}  // namespace redline::attention
