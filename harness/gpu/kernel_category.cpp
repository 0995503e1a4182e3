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
  if (contains_any(name, {"fmha", "flash", "sdpa", "attention", "softmax"})) return KernelCategory::attention;
  if (contains_any(name, {"gemm", "nvjet", "xmma", "cutlass", "matmul"})) return KernelCategory::gemm;
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
