#include "harness/gpu/kernel_category.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace redline {
namespace {

bool contains_any(const std::string& name, std::initializer_list<std::string_view> parts) {
  return std::any_of(parts.begin(), parts.end(), [&](std::string_view p) { return name.find(p) != std::string::npos; });
}

}  // namespace

KernelCategory kernel_category(std::string_view kernel_name) {
  std::string name(kernel_name);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  // A log-softmax is the cross-entropy's (PyTorch's LogSoftMax epilogue,
  // Inductor's triton_red_fused__log_softmax), over the vocabulary: not attention.
  const bool log_softmax = contains_any(name, {"logsoftmax", "log_softmax"});
  if (contains_any(name, {"fmha", "flash", "sdpa", "attention"}) || (!log_softmax && contains_any(name, {"softmax"})))
    return KernelCategory::attention;
  // gemv: cuBLAS's matrix-vector kernels; splitkreduce: the second kernel of a
  // split-K GEMM; triton_tem_: Inductor's matmul (and convolution) templates.
  if (contains_any(name, {"gemm", "nvjet", "xmma", "cutlass", "matmul", "gemv", "splitkreduce", "triton_tem_"}))
    return KernelCategory::gemm;
  return KernelCategory::elementwise;
}

const char* kernel_category_name(KernelCategory category) {
  switch (category) {
    case KernelCategory::gemm: return "gemm";
    case KernelCategory::attention: return "attention";
    case KernelCategory::elementwise: return "elementwise";
  }
  return "?";
}

}  // namespace redline
