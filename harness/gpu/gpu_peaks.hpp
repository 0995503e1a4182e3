// Datasheet ceilings of the GPUs redline knows: dense peak TFLOPS per dtype,
// HBM bandwidth and SM count, looked up from the name the driver reports.
// Measured throughput is reported as a percent of these; a caller lets the
// user override them (a flag) for GPUs or clocks the table does not cover.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace redline {

enum class PeakDtype { fp32, tf32, fp16, bf16, fp8 };

struct GpuPeaks {
  std::string model;      // "H100 SXM"
  int sm_count = 0;
  // Dense (no 2:4 sparsity) TFLOPS at the datasheet's boost clock. fp32 is
  // the non-tensor (FMA) rate; the others are tensor-core rates with FP32
  // accumulate where the datasheet distinguishes. 0: no such rate (A100 fp8).
  double fp32_tflops = 0, tf32_tflops = 0, fp16_tflops = 0, bf16_tflops = 0, fp8_tflops = 0;
  double hbm_GBps = 0;    // 1e9 bytes/s
  int compute_capability = 0;  // x10: 80 (A100), 90 (H100, H200), 100 (B200)
  double boost_clock_ghz = 0;  // the clock the tensor rates above are quoted at

  double tflops(PeakDtype dtype) const;
};

// By substring of the driver's name ("NVIDIA H100 80GB HBM3", "NVIDIA
// A100-SXM4-80GB", "NVIDIA H200", "NVIDIA B200"), case-insensitive. nullopt
// for GPUs not in the table and for variants whose ceilings differ from the
// ones stored (NVL boards, GB200's higher-power B200): an unknown peak, never
// a wrong one.
std::optional<GpuPeaks> lookup_gpu_peaks(std::string_view gpu_name);

// "fp32", "tf32", "fp16", "bf16", "fp8" <-> PeakDtype.
std::optional<PeakDtype> parse_peak_dtype(std::string_view text);
const char* peak_dtype_name(PeakDtype dtype);

// The models in the table, for messages: "A100, H100, H200, B200".
std::string known_gpu_models();

}  // namespace redline
