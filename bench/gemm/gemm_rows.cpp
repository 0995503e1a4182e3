#include "bench/gemm/gemm_rows.hpp"

#include <utility>

namespace redline::gemm {

std::string shape_text(const GemmSize& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

GemmSize size_of(const Row& row) {
  auto dim = [&](const char* name) { return std::stoll(row.param_value(name).value_or("0")); };
  return {dim("m"), dim("n"), dim("k")};
}

std::vector<GemmSize> sizes_of(const std::vector<Row>& rows) {
  std::vector<GemmSize> sizes;
  for (const auto& r : rows) sizes.push_back(size_of(r));
  return sizes;
}

bool is_ok_gemm_row(const Row& row) { return row.status == RowStatus::ok && row.metric_value("tflops").has_value(); }

const Row* best_row(const std::vector<Row>& rows, GemmDtype dtype) {
  const Row* best = nullptr;
  for (const auto& row : rows)
    if (is_ok_gemm_row(row) && row.param_value("dtype") == gemm_dtype_info(dtype).name &&
        (!best || *row.metric_value("tflops") > *best->metric_value("tflops")))
      best = &row;
  return best;
}

void append(std::vector<Row>& to, std::vector<Row> rows) {
  for (auto& r : rows) to.push_back(std::move(r));
}

}  // namespace redline::gemm
