// attention_bench sweep's cases on the GPU case runner (kernels/runner/gpu_case.hpp):
//   attention    one path (unfused or cuDNN), one direction, one layout at
//                one batch: random BHSD inputs, verified before it is timed
//                (the full CPU reference on small shapes, sampled rows of two
//                KV groups against the exact math on large ones), a cuDNN
//                refusal a skipped row with cuDNN's reason;
//   projections  the QKV and output projections around it (forward: two
//                GEMMs; backward: their input and weight gradients), each
//                cuBLASLt's choice, verified, timed back to back;
//   unfused_gemm one GEMM of the unfused path alone (sweep --unfused-gemms),
//                on the tensors the path leaves after a forward and
//                backward, verified against the GEMM reference, and named
//                with its gemm_bench equivalent (gemm_layout, gemm_m, gemm_n,
//                gemm_k, gemm_batch) so scripts/compare-attention-gemms can
//                run gemm_bench on the same shape.
// Every case is named by the layout's parameters, then path and direction.
#pragma once

#include <memory>
#include <optional>

#include "bench/attention/sweep_flags.hpp"
#include "harness/attention/attention_shape.hpp"
#include "harness/attention/head_layout.hpp"
#include "harness/gpu/gpu_peaks.hpp"
#include "kernels/runner/gpu_case.hpp"

namespace redline::attention {

struct AttentionCaseSpec {
  HeadLayout layout;
  AttentionShape shape;  // per GPU
  GemmDtype dtype = GemmDtype::bf16;
  AttentionDirection direction = AttentionDirection::forward;
  std::optional<GpuPeaks> peaks;  // the datasheet for datasheet_pct; nullopt: none
};

std::unique_ptr<GpuCase> make_attention_case(const AttentionCaseSpec& spec, AttentionPath path);
std::unique_ptr<GpuCase> make_projection_case(const AttentionCaseSpec& spec);
// GEMM `index` of unfused_attention_gemms(spec.shape, spec.dtype); the spec's
// direction must be the GEMM's.
std::unique_ptr<GpuCase> make_unfused_gemm_case(const AttentionCaseSpec& spec, std::size_t index);

}  // namespace redline::attention
