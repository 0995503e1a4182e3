// Rotary position embedding (Hugging Face Llama's rotate_half), in place on
// token-major rows [tokens, heads * head_dim]: in each head the pair
// (i, i + d/2) turns by position * theta^(-2i/d), position = token % seq.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace redline {

struct RotaryShape {
  std::int64_t tokens = 0;  // mbs * seq
  std::int64_t seq = 0;
  std::int64_t heads = 0;   // heads of this tensor (a_q for Q, a_kv for K)
  std::int64_t head_dim = 0;
  double theta = 10000;
};

// q'[i] = q[i] cos - q[i + d/2] sin, q'[i + d/2] = q[i + d/2] cos + q[i] sin.
void rotary_forward(__nv_bfloat16* x, const RotaryShape& shape, cudaStream_t stream);

// The gradient turned back by the same angle (the rotation's transpose);
// needs no saved input.
void rotary_backward(__nv_bfloat16* d_x, const RotaryShape& shape, cudaStream_t stream);

}  // namespace redline
