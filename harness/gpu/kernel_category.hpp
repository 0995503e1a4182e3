// Which part of a training step a GPU kernel belongs to, by its name (as
// CUPTI reports it): a GEMM (cuBLAS/cuBLASLt's nvjet, xmma, gemv and split-K
// reduce kernels, CUTLASS, Inductor's matmul templates), attention (cuDNN's
// and FlashAttention's fused kernels, and the unfused path's softmax kernels;
// a log-softmax is the cross-entropy's), or the elementwise rest (norms,
// rotary, SwiGLU, cross-entropy, the optimizer, copies). Names are matched
// case-insensitively; attention is tried first because CUTLASS's and cuDNN's
// attention kernels also name their GEMM building blocks. NCCL kernels and
// memcpy/memset are not told apart here: they read as elementwise, so a
// caller that may see them (the profiler) sorts them out first.
#pragma once

#include <string_view>

namespace redline {

enum class KernelCategory { gemm, attention, elementwise };

KernelCategory kernel_category(std::string_view kernel_name);
const char* kernel_category_name(KernelCategory category);  // "gemm", "attention", "elementwise"

}  // namespace redline
