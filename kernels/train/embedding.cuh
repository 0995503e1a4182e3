// The token embedding: a gather of table rows (forward) and the scatter-add
// of the rows' gradients into the fp32 table gradient (backward).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace redline {

// out[t, :] = table[tokens[t], :] for t < tokens_count; rows of `width`.
void embedding_forward(const std::int32_t* tokens, const __nv_bfloat16* table, __nv_bfloat16* out,
                       std::int64_t tokens_count, std::int64_t width, cudaStream_t stream);

// d_table[tokens[t], :] += d_out[t, :], fp32 atomics: a token repeated in
// the batch adds into one row, so the order of those adds (and the last bits
// of that row) may differ from run to run.
void embedding_backward(const std::int32_t* tokens, const __nv_bfloat16* d_out, float* d_table,
                        std::int64_t tokens_count, std::int64_t width, cudaStream_t stream);

}  // namespace redline
