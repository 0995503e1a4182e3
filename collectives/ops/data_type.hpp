// Element types and reduction operations of the collectives, with nccl-tests'
// names, and host-side conversions for every type (including half, bfloat16
// and fp8, which C++ has no arithmetic for) so data can be generated and
// verified on the host for any backend. Pure C++: no CUDA, NCCL or MPI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redline {

enum class DataType { int8, int32, float16, bfloat16, float32, float64, fp8_e4m3, fp8_e5m2 };
enum class ReduceOp { sum, prod, max, min, avg };

struct DataTypeInfo {
  DataType type;
  std::string_view name;  // nccl-tests' -d name: int8 int32 half bfloat16 float double f8e4m3 f8e5m2
  std::size_t bytes;
  bool is_floating;
  // Largest integer m such that every integer in [-m, m] is exact in the type
  // (2^(mantissa bits + 1) for floating types): how large test data may grow.
  std::int64_t exact_integer_limit;
  // Relative tolerance for results that are not exact (avg): one unit in the
  // last place of the type, 2^-(mantissa bits). 0 for integers.
  double tolerance;
};

const DataTypeInfo& info(DataType type);
std::string_view to_string(ReduceOp op);

// "float", "half", "bf16", "fp8_e4m3", ... -> type; nullopt when unknown.
std::optional<DataType> parse_data_type(std::string_view name);
std::optional<ReduceOp> parse_reduce_op(std::string_view name);

// Every type, and every op, in nccl-tests' order (for "-d all", "-o all").
const std::vector<DataType>& all_data_types();
const std::vector<ReduceOp>& all_reduce_ops();

// Element i of a buffer of `type` as a double, and a double stored into
// element i rounded to nearest even (fp8 e4m3 saturates to +-448, as
// NVIDIA's "fn" variant has no infinity).
double load_element(const void* data, DataType type, std::size_t i);
void store_element(void* data, DataType type, std::size_t i, double value);

// `value` rounded to the type and back: what the type can hold.
double round_to_type(double value, DataType type);

// The smallest positive normal value of a floating type (1 for integers):
// below it the type's spacing is fixed, so a relative error bound turns
// absolute there.
double smallest_normal(DataType type);

}  // namespace redline
