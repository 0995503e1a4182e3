// Copies between the stack's token-major attention tensors (BSHD: rows of
// b*s tokens, heads*d wide) and the dense BHSD layout the unfused attention
// path takes. The cuDNN path reads BSHD in place and needs neither.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace redline {

struct HeadsShape {
  std::int64_t batch = 0, seq = 0, heads = 0, head_dim = 0;
};

void bshd_to_bhsd(const __nv_bfloat16* bshd, __nv_bfloat16* bhsd, const HeadsShape& shape, cudaStream_t stream);
void bhsd_to_bshd(const __nv_bfloat16* bhsd, __nv_bfloat16* bshd, const HeadsShape& shape, cudaStream_t stream);

}  // namespace redline
