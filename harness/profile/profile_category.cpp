#include "harness/profile/profile_category.hpp"

#include "harness/gpu/kernel_category.hpp"

namespace redline::profile {

bool is_nccl_kernel(std::string_view name) {
  return name.find("ncclKernel") != name.npos || name.find("ncclDevKernel") != name.npos;
}

Category category_of(const Activity& a) {
  if (a.kind == ActivityKind::memset) return Category::memset;
  if (a.kind == ActivityKind::memcpy) {
    switch (a.copy) {
      case CopyKind::h2d: return Category::memcpy_h2d;
      case CopyKind::d2h: return Category::memcpy_d2h;
      case CopyKind::d2d: return Category::memcpy_d2d;
      case CopyKind::other: break;
    }
    return Category::memcpy_other;
  }
  if (is_nccl_kernel(a.name)) return Category::nccl;
  switch (kernel_category(a.name)) {
    case KernelCategory::gemm: return Category::gemm;
    case KernelCategory::attention: return Category::attention;
    case KernelCategory::elementwise: break;
  }
  return Category::elementwise;
}

const char* category_name(Category c) {
  switch (c) {
    case Category::gemm: return "gemm";
    case Category::attention: return "attention";
    case Category::nccl: return "nccl";
    case Category::elementwise: return "elementwise";
    case Category::memcpy_h2d: return "memcpy_h2d";
    case Category::memcpy_d2h: return "memcpy_d2h";
    case Category::memcpy_d2d: return "memcpy_d2d";
    case Category::memcpy_other: return "memcpy_other";
    case Category::memset: return "memset";
  }
  return "?";
}

bool is_compute(Category c) { return c == Category::gemm || c == Category::attention || c == Category::elementwise; }

}  // namespace redline::profile
