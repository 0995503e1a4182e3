// The measuring subcommands' flags read into what they mean: the measurement
// policy, the datasheet the percentages use, and which dtypes can run at all.
// Each bad value is a UsageError naming the flag and the value.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/gemm/flags.hpp"
#include "harness/gpu/gemm_dtype.hpp"
#include "harness/gpu/gpu_peaks.hpp"
#include "harness/measure/measurement.hpp"

namespace redline::gemm {


std::vector<GemmDtype> dtypes_of(const MeasureFlags& f);
GemmLayout layout_of(const MeasureFlags& f);

// The percent-of-datasheet figures: the table row for --gpu or the detected
// GPU, with --datasheet-tflops replacing the dtype's rate when given. The
// flags are checked before any GPU is looked for; the detected name comes later.
struct DatasheetChoice {
  std::optional<GpuPeaks> named;   // --gpu
  std::optional<double> tflops;    // --datasheet-tflops
  std::optional<PeakDtype> dtype;  // the one dtype it applies to
  std::optional<double> hbm_gbps;  // --datasheet-gbps
};
DatasheetChoice datasheet_choice(const MeasureFlags& f, const std::vector<GemmDtype>& dtypes);
std::optional<GpuPeaks> datasheet_of(const DatasheetChoice& choice, const std::string& detected_name);

// The dtypes cuBLASLt can run on none of the shapes (FP8 with nn, or with K
// or M never a multiple of 16), each with the reason. When no requested dtype
// can run, that is bad input; otherwise those few are skipped with the reason,
// so `--dtype all --layout nn` still measures the rest.
std::vector<std::pair<GemmDtype, std::string>> unrunnable_dtypes(const std::vector<GemmDtype>& dtypes,
                                                                  GemmLayout layout,
                                                                  const std::vector<GemmSize>& shapes);

// The compute capability a dtype's tensor-core GEMMs need (FP8: Ada/Hopper;
// bf16 and tf32: Ampere), as 10 * major + minor; 0: any GPU.
int required_compute_capability(GemmDtype dtype);

}  // namespace redline::gemm
