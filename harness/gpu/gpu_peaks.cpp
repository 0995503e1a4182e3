#include "harness/gpu/gpu_peaks.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace redline {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

struct Entry {
  std::vector<std::string_view> all_of;  // lower-case substrings the name must contain
  GpuPeaks peaks;
};

// Sources: NVIDIA datasheets, which print tensor rates *with* 2:4 sparsity
// (marked with an asterisk); the values here are half of those, the dense
// rates. Most specific entries first.
//   A100: "NVIDIA A100 Tensor Core GPU" datasheet: FP32 19.5, TF32 156
//     (312*), BF16/FP16 312 (624*); no FP8. HBM2e 2,039 GB/s (80GB SXM),
//     1,935 GB/s (80GB PCIe), 1,555 GB/s (40GB). 108 SMs.
//   H100 SXM: "NVIDIA H100 Tensor Core GPU" datasheet: FP32 67, TF32 989*,
//     BF16/FP16 1,979*, FP8 3,958* -> dense 494.7, 989.4, 1,978.9 (the
//     datasheet rounds; 989.4 = 132 SMs x 4 tensor cores x 1024 FMA x 2 x
//     1.83 GHz). HBM3 3.35 TB/s. 132 SMs.
//   H100 PCIe: same datasheet: FP32 51, TF32 756*, BF16 1,513*, FP8 3,026*;
//     HBM2e 2.0 TB/s; 114 SMs.
//   H200 (SXM): "NVIDIA H200 Tensor Core GPU" datasheet: the H100 SXM's
//     compute (same GH100 at the same clocks), HBM3e 4.8 TB/s. 132 SMs.
//   B200 (HGX, 1,000 W): "NVIDIA HGX B200" datasheet per GPU: FP32 75,
//     TF32 2.2 PF*, BF16/FP16 4.5 PF*, FP8 9 PF* -> dense 1,100, 2,250, 4,500;
//     HBM3e 7.7 TB/s on the 180 GB part (launch material said 8 TB/s for
//     192 GB). 148 SMs. Less certain than the others: NVIDIA's figures for
//     B200 moved between launch material and the HGX datasheet, and they
//     depend on the configured power limit.
// The boost clock is the one the dense tensor rate implies: bf16 TFLOPS /
// (SMs x dense bf16 FLOP per SM per clock: 2,048 on A100, 4,096 on H100 and
// H200, 8,192 on B200), e.g. 989.4e12 / (132 x 4,096) = 1.83 GHz; attention's
// model uses it for the rate of the SM's special-function units.
// NVL boards (H100 NVL, H200 NVL) run at lower power with other ceilings,
// and GB200's B200 at 1,200 W with higher ones, so they are not matched.
const std::vector<Entry>& table() {
  static const std::vector<Entry> entries = {
      {{"a100", "40gb"}, {"A100 40GB", 108, 19.5, 156, 312, 312, 0, 1555, 80, 1.41}},
      {{"a100", "pcie"}, {"A100 PCIe 80GB", 108, 19.5, 156, 312, 312, 0, 1935, 80, 1.41}},
      {{"a100"}, {"A100 SXM 80GB", 108, 19.5, 156, 312, 312, 0, 2039, 80, 1.41}},
      {{"h100", "pcie"}, {"H100 PCIe", 114, 51, 378, 756.5, 756.5, 1513, 2000, 90, 1.62}},
      {{"h100"}, {"H100 SXM", 132, 67, 494.7, 989.4, 989.4, 1978.9, 3350, 90, 1.83}},
      {{"h200"}, {"H200 SXM", 132, 67, 494.7, 989.4, 989.4, 1978.9, 4800, 90, 1.83}},
      {{"b200"}, {"B200 (HGX)", 148, 75, 1100, 2250, 2250, 4500, 7700, 100, 1.86}},
  };
  return entries;
}

}  // namespace

double GpuPeaks::tflops(PeakDtype dtype) const {
  switch (dtype) {
    case PeakDtype::fp32: return fp32_tflops;
    case PeakDtype::tf32: return tf32_tflops;
    case PeakDtype::fp16: return fp16_tflops;
    case PeakDtype::bf16: return bf16_tflops;
    case PeakDtype::fp8: return fp8_tflops;
  }
  return 0;
}

std::optional<GpuPeaks> lookup_gpu_peaks(std::string_view gpu_name) {
  const std::string name = lower(gpu_name);
  // Grace-Hopper/Blackwell superchips and NVL boards have other clocks and
  // memory: no entry beats a wrong one.
  if (name.find("nvl") != std::string::npos || name.find("gb200") != std::string::npos ||
      name.find("gh200") != std::string::npos)
    return std::nullopt;
  for (const auto& entry : table())
    if (std::all_of(entry.all_of.begin(), entry.all_of.end(),
                    [&](std::string_view part) { return name.find(part) != std::string::npos; }))
      return entry.peaks;
  return std::nullopt;
}

std::optional<PeakDtype> parse_peak_dtype(std::string_view text) {
  for (auto d : {PeakDtype::fp32, PeakDtype::tf32, PeakDtype::fp16, PeakDtype::bf16, PeakDtype::fp8})
    if (text == peak_dtype_name(d)) return d;
  return std::nullopt;
}

const char* peak_dtype_name(PeakDtype dtype) {
  switch (dtype) {
    case PeakDtype::fp32: return "fp32";
    case PeakDtype::tf32: return "tf32";
    case PeakDtype::fp16: return "fp16";
    case PeakDtype::bf16: return "bf16";
    case PeakDtype::fp8: return "fp8";
  }
  return "?";
}

std::string known_gpu_models() { return "A100, H100 (SXM, PCIe), H200, B200"; }

}  // namespace redline
