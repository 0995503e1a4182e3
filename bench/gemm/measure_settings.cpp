#include "bench/gemm/measure_settings.hpp"

#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline::gemm {

std::vector<GemmDtype> dtypes_of(const MeasureFlags& f) { return parse_gemm_dtypes("--dtype", f.dtype); }

GemmLayout layout_of(const MeasureFlags& f) {
  const auto layout = parse_gemm_layout(f.layout);
  if (!layout) throw UsageError("--layout", f.layout, "must be tn, nn or nt");
  return *layout;
}

DatasheetChoice datasheet_choice(const MeasureFlags& f, const std::vector<GemmDtype>& dtypes) {
  DatasheetChoice choice;
  if (!f.gpu.empty()) {
    choice.named = lookup_gpu_peaks(f.gpu);
    if (!choice.named) throw UsageError("--gpu", f.gpu, "unknown GPU (known: " + known_gpu_models() + ")");
  }
  if (!f.datasheet_tflops.empty()) {
    choice.tflops = parse_number("--datasheet-tflops", f.datasheet_tflops);
    if (!(*choice.tflops > 0)) throw UsageError("--datasheet-tflops", f.datasheet_tflops, "must be positive");
    if (dtypes.size() != 1)
      throw UsageError("--datasheet-tflops", f.datasheet_tflops, "applies to one --dtype at a time");
    choice.dtype = gemm_dtype_info(dtypes.front()).peak;
  }
  if (!f.datasheet_gbps.empty()) {
    choice.hbm_gbps = parse_number("--datasheet-gbps", f.datasheet_gbps);
    if (!(*choice.hbm_gbps > 0)) throw UsageError("--datasheet-gbps", f.datasheet_gbps, "must be positive");
  }
  return choice;
}

std::optional<GpuPeaks> datasheet_of(const DatasheetChoice& choice, const std::string& detected_name) {
  std::optional<GpuPeaks> peaks = choice.named ? choice.named : lookup_gpu_peaks(detected_name);
  if (choice.hbm_gbps) {
    if (!peaks) peaks = GpuPeaks{detected_name + " (--datasheet-gbps)"};
    peaks->hbm_GBps = *choice.hbm_gbps;
  }
  if (!choice.tflops) return peaks;
  if (!peaks) peaks = GpuPeaks{detected_name + " (--datasheet-tflops)"};
  switch (*choice.dtype) {
    case PeakDtype::fp32: peaks->fp32_tflops = *choice.tflops; break;
    case PeakDtype::tf32: peaks->tf32_tflops = *choice.tflops; break;
    case PeakDtype::fp16: peaks->fp16_tflops = *choice.tflops; break;
    case PeakDtype::bf16: peaks->bf16_tflops = *choice.tflops; break;
    case PeakDtype::fp8: peaks->fp8_tflops = *choice.tflops; break;
  }
  return peaks;
}

std::vector<std::pair<GemmDtype, std::string>> unrunnable_dtypes(const std::vector<GemmDtype>& dtypes,
                                                                  GemmLayout layout,
                                                                  const std::vector<GemmSize>& shapes) {
  std::vector<std::pair<GemmDtype, std::string>> unrunnable;
  for (GemmDtype dtype : dtypes) {
    std::optional<std::string> reason;
    bool runnable = false;
    for (const auto& shape : shapes) {
      const auto why = gemm_unsupported_reason(dtype, layout, shape.m, shape.n, shape.k);
      runnable = runnable || !why;
      if (why && !reason) reason = why;
    }
    if (!runnable && reason) unrunnable.emplace_back(dtype, "no shape can run: " + *reason);
  }
  if (!dtypes.empty() && unrunnable.size() == dtypes.size())
    throw UsageError("--dtype", gemm_dtype_info(unrunnable.front().first).name, unrunnable.front().second);
  return unrunnable;
}

int required_compute_capability(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::fp8_e4m3:
    case GemmDtype::fp8_e4m3_e5m2: return 89;
    case GemmDtype::bf16:
    case GemmDtype::tf32: return 80;
    default: return 0;
  }
}

}  // namespace redline::gemm
