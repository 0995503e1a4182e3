#include "harness/attention/fused_kernels.hpp"

#include <array>

namespace redline {
namespace {

std::string text(std::int64_t value) { return std::to_string(value); }

FusedSupport unsupported(std::string reason) { return {false, 0, std::move(reason)}; }

FusedSupport runs_at(std::int64_t head_dim, std::int64_t kernel_head_dim) {
  if (kernel_head_dim == head_dim) return {true, head_dim, "d = " + text(head_dim) + " has its own kernel"};
  return {true, kernel_head_dim, "rounds d = " + text(head_dim) + " up to " + text(kernel_head_dim)};
}

bool is_fp8(GemmDtype dtype) { return dtype == GemmDtype::fp8_e4m3; }

}  // namespace

const char* direction_name(AttentionDirection direction) {
  return direction == AttentionDirection::forward ? "fwd" : "bwd";
}

bool is_attention_dtype(GemmDtype dtype) {
  return dtype == GemmDtype::bf16 || dtype == GemmDtype::fp16 || dtype == GemmDtype::fp8_e4m3;
}

FusedSupport flash_attention3_support(std::int64_t head_dim, GemmDtype dtype, AttentionDirection direction,
                                      int compute_capability) {
  if (!is_attention_dtype(dtype)) return unsupported("FlashAttention-3 has no " + std::string(gemm_dtype_info(dtype).name) + " kernels");
  // FA3 is written for Hopper's TMA and warpgroup MMA; other GPUs run FA2.
  if (compute_capability != 90) return unsupported("FlashAttention-3 runs on Hopper (sm_90) only");
  if (is_fp8(dtype) && direction == AttentionDirection::backward)
    return unsupported("FlashAttention-3 has no FP8 backward");
  if (head_dim % 8 != 0) return unsupported("FlashAttention-3 needs d a multiple of 8, not " + text(head_dim));
  static constexpr std::array<std::int64_t, 5> kBuilt = {64, 96, 128, 192, 256};
  for (std::int64_t built : kBuilt)
    if (head_dim <= built) return runs_at(head_dim, built);
  return unsupported("FlashAttention-3 stops at d = 256, not " + text(head_dim));
}

FusedSupport cudnn_sdpa_support(std::int64_t head_dim, GemmDtype dtype, AttentionDirection direction,
                                int compute_capability) {
  if (!is_attention_dtype(dtype)) return unsupported("cuDNN SDPA has no " + std::string(gemm_dtype_info(dtype).name) + " kernels");
  if (compute_capability < 80) return unsupported("cuDNN SDPA needs Ampere (sm_80) or later");
  const bool backward = direction == AttentionDirection::backward;
  if (is_fp8(dtype)) {
    if (compute_capability < 90) return unsupported("cuDNN's FP8 SDPA needs Hopper (sm_90) or later");
    if (backward && compute_capability == 90 && head_dim != 128)
      return unsupported("cuDNN's FP8 backward on Hopper does d = 128 only, not " + text(head_dim));
    // 16 one-byte elements: the 16-byte rows its loads need.
    if (head_dim % 16 != 0 || head_dim > 256)
      return unsupported("cuDNN's FP8 SDPA needs d a multiple of 16 up to 256, not " + text(head_dim));
    return runs_at(head_dim, head_dim);
  }
  if (head_dim % 8 != 0) return unsupported("cuDNN SDPA needs d a multiple of 8, not " + text(head_dim));
  const std::int64_t limit = backward && compute_capability < 90 ? 128 : 256;
  if (head_dim > limit)
    return unsupported("cuDNN SDPA " + std::string(direction_name(direction)) + " stops at d = " + text(limit) +
                       " on this GPU, not " + text(head_dim));
  return runs_at(head_dim, head_dim);
}

}  // namespace redline
