// Where a GPU record's time goes in a profile: the kernel categories of a
// training step (harness/gpu/kernel_category.hpp) with NCCL's collectives
// apart, and copies by direction.
#pragma once

#include <array>
#include <string_view>

#include "harness/profile/activity.hpp"

namespace redline::profile {

enum class Category { gemm, attention, nccl, elementwise, memcpy_h2d, memcpy_d2h, memcpy_d2d, memcpy_other, memset };

inline constexpr std::array<Category, 9> kCategories = {
    Category::gemm,       Category::attention,  Category::nccl,         Category::elementwise, Category::memcpy_h2d,
    Category::memcpy_d2h, Category::memcpy_d2d, Category::memcpy_other, Category::memset};

// Of a kernel, copy or memset (a range has none: it is not GPU work).
Category category_of(const Activity& a);
const char* category_name(Category c);  // "gemm", "nccl", "memcpy_h2d", ...
bool is_compute(Category c);            // a kernel's, NCCL's excepted: what a collective can overlap with

// NCCL's kernels: ncclKernel_*, ncclDevKernel_* (their names since NCCL 2.19).
bool is_nccl_kernel(std::string_view name);

}  // namespace redline::profile
