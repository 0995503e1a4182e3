// Fits the attention model's measured parameters (FusedKernelFit) to a GPU's
// reference sweep, so the model is held to what was measured and a test can
// check the constants compiled into attention_model.hpp against the data.
//
// The fit set is the hidden-4096 sweep (16, 32 or 64 heads, d 256, 128, 64;
// seq 4096, bf16, non-causal), each parameter pinned by one measurement:
//   fwd_ceiling     cuDNN's forward at d = 128, batch 1;
//   bwd_ceiling     its backward at d = 128, batch 4;
//   large_head_bwd  its backward at d = 256, batch 4;
//   large_head_fwd  the block at d = 256, batch 4 (its forward is what the
//                   backward and the projections leave);
//   gemm_ceiling    the block at d = 128, batch 4 (what attention leaves of it
//                   is the projections' time);
//   exp_exposed     the block at d = 64, batch 4, against d = 128's: the one
//                   layout whose loss is the exponentials;
//   fp8_bwd_ceiling cuDNN's FP8 backward at the one FP8 shape measured
//                   (hidden 8192, 64 query / 8 KV heads, seq 32768, batch 1).
// The ceilings depend on exp_exposed, so it is found by bisection with the
// others solved exactly inside. Anything else (hidden 5120 with GQA and the
// causal mask, the published shape) is held back to check the fit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "harness/attention/attention_model.hpp"
#include "harness/report/run_results.hpp"

namespace redline {

// One measured attention row's shape, to find it in a reference.
struct MeasuredAttention {
  HeadLayout layout;
  std::int64_t batch = 1, seq = 4096;
  bool causal = false;
  std::string dtype = "bf16";
  std::string path;       // "cudnn", "block_cudnn"
  std::string direction;  // "fwd", "bwd", "train"
};

// The reference's ok row of that shape with a tflops figure; nullptr when none.
const ResultRow* find_measured(const RunResults& reference, const MeasuredAttention& shape);

// That row's tflops; nullopt when there is none.
std::optional<double> measured_tflops(const RunResults& reference, const MeasuredAttention& shape);

// Throws std::runtime_error naming the first measurement of the fit set the
// reference lacks. `gpu` gives the SMs, the peak and the exp cost; its fit is
// ignored.
FusedKernelFit fit_fused_kernels(const RunResults& reference, ModelGpu gpu, const std::string& source);

}  // namespace redline
