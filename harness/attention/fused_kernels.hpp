// Which fused attention kernels run a head dim, for a dtype, a direction and
// a GPU generation, and the head dim they really compute at. A kernel that
// rounds d up (FlashAttention-3's 80 -> 96) does the padded work in the time
// it takes, so its useful throughput is d / padded of what it reaches at the
// padded size.
//
// The tables, from the libraries' own documentation (docs/attention_bench.md
// cites them):
//   FlashAttention-3 (Hopper only): kernels for d = 64, 96, 128, 192, 256;
//     any other d up to 256 runs the next one up (80 -> 96, 112 -> 128,
//     160 -> 192). d must be a multiple of 8. FP8: forward only.
//   cuDNN 9 SDPA (the cudnn frontend's support matrix): fp16/bf16 any d that
//     is a multiple of 8 up to 256 (Ampere/Ada backward: up to 128); FP8 on
//     Hopper and later only, forward d a multiple of 16 up to 256, backward
//     d = 128 only on Hopper.
// A plan is a prediction: the sweep asks cuDNN itself (check_support) and
// reports what it says.
#pragma once

#include <cstdint>
#include <string>

#include "harness/gpu/gemm_dtype.hpp"

namespace redline {

enum class AttentionDirection { forward, backward };
const char* direction_name(AttentionDirection direction);  // "fwd", "bwd"

struct FusedSupport {
  bool supported = false;
  std::int64_t kernel_head_dim = 0;  // the d the kernel computes at (>= d); 0 when unsupported
  std::string reason;                // why not, or what the kernel does: "rounds d = 80 up to 96"
};

// dtype: bf16, fp16 or fp8_e4m3 (the attention dtypes; others are unsupported).
// compute_capability x10: 80, 90, 100.
FusedSupport flash_attention3_support(std::int64_t head_dim, GemmDtype dtype, AttentionDirection direction,
                                      int compute_capability);
FusedSupport cudnn_sdpa_support(std::int64_t head_dim, GemmDtype dtype, AttentionDirection direction,
                                int compute_capability);

// The dtypes attention runs: bf16, fp16, fp8 (e4m3 inputs).
bool is_attention_dtype(GemmDtype dtype);

}  // namespace redline
