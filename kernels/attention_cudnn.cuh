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
// stored as they are. The others put each tensor's typical magnitude
// (P <= 1; |O|, |dV| ~ 0.1-1; |dP| ~ sqrt(d)/3; |dQ|, |dK| ~ 0.01-0.1 for
// d = 64-128, s = 128-1024) well inside e4m3's normal range (2^-6 .. 448)
// without reaching 448. Chosen without a GPU at hand: the amax outputs
// (CudnnAttention::fp8_amax) show where they sit.
struct AttentionFp8Scales {
  float q = 1, k = 1, v = 1, d_o = 1;
  float s = 256;  // P
  float o = 16;
  float dp = 8;
  float dq = 64, dk = 64, dv = 16;
};
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

  // "9.19.0 (frontend 1.32.0)"; "" when built without cuDNN.
  static std::string version();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace redline
