// SwiGLU's elementwise part, act = silu(gate) * up, and its backward.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace redline {

void swiglu_forward(const __nv_bfloat16* gate, const __nv_bfloat16* up, __nv_bfloat16* act, std::int64_t count,
                    cudaStream_t stream);

// d_gate = d_act * up * silu'(gate), d_up = d_act * silu(gate), with
// silu'(g) = sigmoid(g) (1 + g (1 - sigmoid(g))).
void swiglu_backward(const __nv_bfloat16* d_act, const __nv_bfloat16* gate, const __nv_bfloat16* up,
                     __nv_bfloat16* d_gate, __nv_bfloat16* d_up, std::int64_t count, cudaStream_t stream);

}  // namespace redline
