// Fused attention through the cuDNN frontend's graph API: graph.sdpa
// (forward, with the LSE "stats" a training step keeps), sdpa_backward, and
// their FP8 forms (sdpa_fp8, sdpa_fp8_backward: e4m3 tensors with
// per-tensor scale and descale inputs and amax outputs). Same BHSD tensors
// as the unfused path (attention_tensors.cuh); GQA through K and V's a_kv
// heads; causal through the frontend's causal mask (top-left: column > row
// masked).
//
// A shape, dtype or GPU cuDNN cannot run is not an error: the object is
// built unsupported, with cuDNN's own reason, and the tool reports the case
// as skipped. Without the CUDNN feature every object is unsupported, saying
// so. Only attention_cudnn.cpp includes the frontend's (heavy) headers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>

#include "harness/attention/attention_shape.hpp"
#include "harness/gpu/gemm_dtype.hpp"
#include "kernels/attention_tensors.cuh"

namespace redline {

// How Q, K, V, O and their gradients are stored (the LSE is b x a_q x s
// either way). bhsd: dense [b, heads, s, d], attention_tensors.cuh's
// layout. bshd: token-major, [b, s, heads, d] = rows of b*s tokens of
// heads*d, as a projection GEMM writes them; a training step hands cuDNN
// its Q, K and V projections there without a transposing copy.
enum class AttentionLayout { bhsd, bshd };

// FP8 per-tensor scaling: stored = real * scale, and the graph is given
// descale = 1 / scale for what it reads. Powers of two, so scaling adds no
// rounding of its own. The inputs (Q, K, V, dO, drawn in [-1, 1)) are
// stored as they are. The rest are starting points only: a CudnnAttention
// is calibrated (calibrate_fp8) on its own tensors before it is trusted,
// because the right scales depend on the shape. The backward's dS
// (= P (dO V^T - rowsum(dO O)) / sqrt(d), about 0.3 / s in magnitude for
// random inputs) and its recomputed, normalized P (~1 / s) shrink with s,
// so any fixed scale underflows them at some length (dp = 8 zeroes dS, and
// with it dQ and dK, from s = 4096). The forward's P is unnormalized
// (exp(S - rowmax) <= 1, with 1 in every row), so it keeps its own scale
// (s) apart from the backward's (s_backward). The defaults are the
// objects' values before calibration and what the checks assume for
// tensors no CudnnAttention wrote.
struct AttentionFp8Scales {
  float q = 1, k = 1, v = 1, d_o = 1;
  float s = 256;           // the forward's P: unnormalized, exp(S - running max) <= 1, so never refitted
  float s_backward = 256;  // the backward's P (exp(S - LSE) <= 1)
  float o = 16;
  float dp = 8;  // dS
  float dq = 64, dk = 64, dv = 16;
};
// The defaults above.
const AttentionFp8Scales& attention_fp8_scales();

// What cuDNN's FP8 graphs report as each tensor's absolute maximum
// (before scaling), after the last forward / backward.
struct AttentionFp8Amax {
  float s = 0, o = 0, dq = 0, dk = 0, dv = 0, dp = 0;
};

// `dtype`: bf16, fp16 or fp8_e4m3. Builds the forward graph (and the
// backward one with `with_backward`) for the current device, on the cuDNN
// handle of `stream` (one per device and stream, created on first use and
// kept for the process: creating one costs far more than a case), and
// allocates the larger workspace. Throws CudaError when the workspace does
// not fit (is_out_of_memory()) and std::invalid_argument for an invalid
// shape; anything cuDNN refuses makes it unsupported instead.
class CudnnAttention {
 public:
  CudnnAttention(const AttentionShape& shape, GemmDtype dtype, bool with_backward, cudaStream_t stream,
                 AttentionLayout layout = AttentionLayout::bhsd);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  bool supported() const;
  // Why not, e.g. "backward: cuDNN check_support: ... (GRAPH_NOT_SUPPORTED)"; empty when supported.
  const std::string& unsupported_reason() const;

  // Enqueue on the constructor's stream, never synchronize. forward writes
  // o and lse; backward reads q, k, v, o, lse, d_o and writes dq, dk, dv.
  // Throw std::logic_error when unsupported (or planned without the
  // backward), std::runtime_error naming cuDNN's error when execution fails.
  void forward(const AttentionTensors& tensors) const;
  void backward(const AttentionTensors& tensors) const;

  std::size_t workspace_bytes() const;
  // FP8 only (zeros otherwise); synchronizes the stream to read them.
  AttentionFp8Amax fp8_amax() const;

  // FP8 only (does nothing for bf16 and fp16): fits the scales of the
  // tensors this object writes to `tensors` (Q, K, V and dO filled). Runs
  // the forward, sets the scale of P and O from their amaxes, and runs it
  // again so O is written with the scale the backward reads it with. With
  // the backward: the scale of its recomputed P from a bound on
  // exp(S - LSE) (the graph reports no amax for it; read from Q, K and the
  // LSE on the host, O(b a s d)), then the backward twice, setting dS, dV
  // (first run) and dQ, dK (second, now that dS no longer underflows).
  // Last, the forward and the backward once more: every output written with
  // the final scales, and fp8_amax() then reads this run's amaxes. Each
  // scale is 2^floor(log2(448 / (2 amax))): a power of two with at least 2x
  // headroom below e4m3's 448; an amax of 0 or not finite keeps the old
  // scale. Synchronizes; call it in set-up, not in timed work. Throws
  // std::logic_error when unsupported.
  void calibrate_fp8(const AttentionTensors& tensors);
  // The scales this object's FP8 tensors are stored with (for reading them
  // back: attention_check's `scales`); the defaults for other dtypes.
  AttentionFp8Scales fp8_scales() const;

  // "9.19.0 (frontend 1.32.0)"; "" when built without cuDNN.
  static std::string version();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace redline
