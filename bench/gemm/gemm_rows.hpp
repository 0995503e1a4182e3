// Reading gemm_bench's measured rows back: a row's shape, whether it ran ok,
// the best of a dtype.
#pragma once

#include <string>
#include <vector>

#include "harness/gpu/gemm_dtype.hpp"
#include "harness/gemm/gemm_peak_search.hpp"
#include "harness/report/report.hpp"

namespace redline::gemm {

std::string shape_text(const GemmSize& s);  // "4096x4096x8192"
GemmSize size_of(const Row& row);           // from its m, n, k parameters
std::vector<GemmSize> sizes_of(const std::vector<Row>& rows);
// A GEMM row that ran ok and has its TFLOPS.
bool is_ok_gemm_row(const Row& row);
// The ok row of `dtype` with the most TFLOPS; nullptr for none.
const Row* best_row(const std::vector<Row>& rows, GemmDtype dtype);

void append(std::vector<Row>& to, std::vector<Row> rows);

}  // namespace redline::gemm
