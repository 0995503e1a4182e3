// The element types of the collectives: their table, their names, and exact
// host-side encodings of the types C++ has no arithmetic for (half, bfloat16,
// fp8), so any backend's buffers can be generated and checked on the host.
#include "collectives/ops/data_type.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

namespace redline {
namespace {

// One row per DataType, in the enum's order.
constexpr std::array<DataTypeInfo, 8> kInfo = {{
    {DataType::int8, "int8", 1, false, 127, 0.0},
    {DataType::int32, "int32", 4, false, 2147483647, 0.0},
    {DataType::float16, "half", 2, true, std::int64_t{1} << 11, 0x1p-10},
    {DataType::bfloat16, "bfloat16", 2, true, std::int64_t{1} << 8, 0x1p-7},
    {DataType::float32, "float", 4, true, std::int64_t{1} << 24, 0x1p-23},
    {DataType::float64, "double", 8, true, std::int64_t{1} << 53, 0x1p-52},
    {DataType::fp8_e4m3, "f8e4m3", 1, true, 16, 0x1p-3},
    {DataType::fp8_e5m2, "f8e5m2", 1, true, 8, 0x1p-2},
}};

// A binary floating format narrower than double. `finite_only` is NVIDIA's
// e4m3 "fn" variant: no infinity, the all-ones exponent holds normal numbers,
// only S.1111.111 is NaN, and conversions saturate to +-448.
struct Format {
  int exponent_bits;
  int mantissa_bits;
  bool finite_only;
};
constexpr Format kHalf{5, 10, false};
constexpr Format kBfloat16{8, 7, false};
constexpr Format kFloat{8, 23, false};
constexpr Format kE4M3{4, 3, true};
constexpr Format kE5M2{5, 2, false};

// Round to an integer, ties to even, whatever the FPU rounding mode is.
double round_half_even(double x) {
  const double down = std::floor(x);
  const double rest = x - down;
  if (rest > 0.5) return down + 1;
  if (rest < 0.5) return down;
  return std::fmod(down, 2.0) == 0.0 ? down : down + 1;
}

int bias(Format f) { return (1 << (f.exponent_bits - 1)) - 1; }
std::uint32_t all_ones_exponent(Format f) { return (1u << f.exponent_bits) - 1; }
std::uint32_t mantissa_mask(Format f) { return (1u << f.mantissa_bits) - 1; }

// Correctly rounded (to nearest, ties to even) from the double's bits, with
// integer arithmetic only: exact, and fast enough to fill gigabyte buffers.
std::uint32_t encode(double value, Format f) {
  const int mantissa_bits = f.mantissa_bits;
  const std::uint32_t sign = std::signbit(value) ? 1u << (f.exponent_bits + mantissa_bits) : 0u;
  const std::uint32_t infinity = all_ones_exponent(f) << mantissa_bits;
  // fn gives the all-ones mantissa at the top exponent to NaN; IEEE formats
  // give the whole top exponent to infinity and NaN.
  const std::uint32_t largest = f.finite_only ? infinity | (mantissa_mask(f) - 1) : infinity - 1;
  const std::uint32_t overflow = f.finite_only ? largest : infinity;
  if (std::isnan(value)) {
    return f.finite_only ? infinity | mantissa_mask(f) : infinity | (1u << (mantissa_bits - 1));  // quiet NaN
  }
  if (std::isinf(value)) return sign | overflow;

  std::uint64_t d;
  std::memcpy(&d, &value, sizeof d);
  const int raw_exponent = static_cast<int>((d >> 52) & 0x7FF);
  if (raw_exponent == 0) return sign;  // zero, or a double subnormal: far below every format's range
  const std::uint64_t significand = (d & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);
  const int exponent = raw_exponent - 1023;
  const int emin = 1 - bias(f);
  // Keep mantissa_bits fraction bits at this exponent, fewer below the normal range.
  const int shift = 52 - mantissa_bits + std::max(0, emin - exponent);
  if (shift > 53) return sign;  // below half the smallest subnormal
  std::uint64_t units = significand >> shift;
  const std::uint64_t rest = significand & ((std::uint64_t{1} << shift) - 1);
  const std::uint64_t half = std::uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (units & 1))) ++units;
  // Normal: the implicit bit is replaced by the exponent field, and a carry
  // out of the mantissa moves into the exponent by itself. Subnormal: the
  // units are the bits (a carry makes the smallest normal).
  const std::int64_t magnitude =
      exponent >= emin ? (std::int64_t{exponent + bias(f)} << mantissa_bits) +
                             static_cast<std::int64_t>(units) - (std::int64_t{1} << mantissa_bits)
                       : static_cast<std::int64_t>(units);
  if (magnitude > static_cast<std::int64_t>(largest)) return sign | overflow;
  return sign | static_cast<std::uint32_t>(magnitude);
}

double decode(std::uint32_t bits, Format f) {
  const bool negative = (bits >> (f.exponent_bits + f.mantissa_bits)) & 1u;
  const std::uint32_t biased = (bits >> f.mantissa_bits) & all_ones_exponent(f);
  const std::uint32_t mantissa = bits & mantissa_mask(f);
  double magnitude;
  if (biased == all_ones_exponent(f) && f.finite_only && mantissa == mantissa_mask(f)) {
    return std::numeric_limits<double>::quiet_NaN();
  } else if (biased == all_ones_exponent(f) && !f.finite_only) {
    if (mantissa != 0) return std::numeric_limits<double>::quiet_NaN();
    magnitude = std::numeric_limits<double>::infinity();
  } else if (biased == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - bias(f) - f.mantissa_bits);
  } else {
    // Every normal number of these formats is a normal double with the same mantissa.
    const std::uint64_t d = (static_cast<std::uint64_t>(static_cast<int>(biased) - bias(f) + 1023) << 52) |
                            (static_cast<std::uint64_t>(mantissa) << (52 - f.mantissa_bits));
    std::memcpy(&magnitude, &d, sizeof magnitude);
  }
  return negative ? -magnitude : magnitude;
}

// Integers have no NaN: it stores as 0. Out-of-range values clamp.
template <typename Int>
Int to_integer(double value) {
  if (std::isnan(value)) return 0;
  const double r = round_half_even(value);
  if (r <= static_cast<double>(std::numeric_limits<Int>::min())) return std::numeric_limits<Int>::min();
  if (r >= static_cast<double>(std::numeric_limits<Int>::max())) return std::numeric_limits<Int>::max();
  return static_cast<Int>(r);
}

template <typename T>
T load_raw(const void* data, std::size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(data) + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void store_raw(void* data, std::size_t i, T v) {
  std::memcpy(static_cast<char*>(data) + i * sizeof(T), &v, sizeof(T));
}

float to_float(double value) {
  const std::uint32_t bits = encode(value, kFloat);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

}  // namespace

const DataTypeInfo& info(DataType type) {
  const auto index = static_cast<std::size_t>(type);
  if (index >= kInfo.size()) throw std::invalid_argument("unknown DataType");
  return kInfo[index];
}

std::string_view to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::prod: return "prod";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
    case ReduceOp::avg: return "avg";
  }
  throw std::invalid_argument("unknown ReduceOp");
}

std::optional<DataType> parse_data_type(std::string_view name) {
  static const std::pair<std::string_view, DataType> kNames[] = {
      {"int8", DataType::int8},         {"int8_t", DataType::int8},
      {"int32", DataType::int32},       {"int", DataType::int32},
      {"int32_t", DataType::int32},     {"half", DataType::float16},
      {"float16", DataType::float16},   {"fp16", DataType::float16},
      {"f16", DataType::float16},       {"bfloat16", DataType::bfloat16},
      {"bf16", DataType::bfloat16},     {"float", DataType::float32},
      {"float32", DataType::float32},   {"fp32", DataType::float32},
      {"f32", DataType::float32},       {"double", DataType::float64},
      {"float64", DataType::float64},   {"fp64", DataType::float64},
      {"f64", DataType::float64},       {"f8e4m3", DataType::fp8_e4m3},
      {"fp8_e4m3", DataType::fp8_e4m3}, {"fp8e4m3", DataType::fp8_e4m3},
      {"e4m3", DataType::fp8_e4m3},     {"f8e5m2", DataType::fp8_e5m2},
      {"fp8_e5m2", DataType::fp8_e5m2}, {"fp8e5m2", DataType::fp8_e5m2},
      {"e5m2", DataType::fp8_e5m2},
  };
  const std::string key = lower(name);
  for (const auto& [n, type] : kNames) {
    if (key == n) return type;
  }
  return std::nullopt;
}

std::optional<ReduceOp> parse_reduce_op(std::string_view name) {
  const std::string key = lower(name);
  for (ReduceOp op : all_reduce_ops()) {
    if (key == to_string(op)) return op;
  }
  return std::nullopt;
}

const std::vector<DataType>& all_data_types() {
  static const std::vector<DataType> kAll = {DataType::int8,    DataType::int32,    DataType::float16,
                                             DataType::float32, DataType::float64,  DataType::bfloat16,
                                             DataType::fp8_e4m3, DataType::fp8_e5m2};
  return kAll;
}

const std::vector<ReduceOp>& all_reduce_ops() {
  static const std::vector<ReduceOp> kAll = {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min,
                                             ReduceOp::avg};
  return kAll;
}

double load_element(const void* data, DataType type, std::size_t i) {
  switch (type) {
    case DataType::int8: return load_raw<std::int8_t>(data, i);
    case DataType::int32: return load_raw<std::int32_t>(data, i);
    case DataType::float16: return decode(load_raw<std::uint16_t>(data, i), kHalf);
    case DataType::bfloat16: return decode(load_raw<std::uint16_t>(data, i), kBfloat16);
    case DataType::float32: return load_raw<float>(data, i);
    case DataType::float64: return load_raw<double>(data, i);
    case DataType::fp8_e4m3: return decode(load_raw<std::uint8_t>(data, i), kE4M3);
    case DataType::fp8_e5m2: return decode(load_raw<std::uint8_t>(data, i), kE5M2);
  }
  throw std::invalid_argument("unknown DataType");
}

void store_element(void* data, DataType type, std::size_t i, double value) {
  switch (type) {
    case DataType::int8: return store_raw(data, i, to_integer<std::int8_t>(value));
    case DataType::int32: return store_raw(data, i, to_integer<std::int32_t>(value));
    case DataType::float16: return store_raw(data, i, static_cast<std::uint16_t>(encode(value, kHalf)));
    case DataType::bfloat16: return store_raw(data, i, static_cast<std::uint16_t>(encode(value, kBfloat16)));
    case DataType::float32: return store_raw(data, i, to_float(value));
    case DataType::float64: return store_raw(data, i, value);
    case DataType::fp8_e4m3: return store_raw(data, i, static_cast<std::uint8_t>(encode(value, kE4M3)));
    case DataType::fp8_e5m2: return store_raw(data, i, static_cast<std::uint8_t>(encode(value, kE5M2)));
  }
  throw std::invalid_argument("unknown DataType");
}

double smallest_normal(DataType type) {
  switch (type) {
    case DataType::float16: return 0x1p-14;
    case DataType::bfloat16: return 0x1p-126;
    case DataType::float32: return 0x1p-126;
    case DataType::float64: return 0x1p-1022;
    case DataType::fp8_e4m3: return 0x1p-6;
    case DataType::fp8_e5m2: return 0x1p-14;
    case DataType::int8:
    case DataType::int32: return 1.0;
  }
  throw std::invalid_argument("unknown DataType");
}

double round_to_type(double value, DataType type) {
  switch (type) {
    case DataType::int8: return to_integer<std::int8_t>(value);
    case DataType::int32: return to_integer<std::int32_t>(value);
    case DataType::float16: return decode(encode(value, kHalf), kHalf);
    case DataType::bfloat16: return decode(encode(value, kBfloat16), kBfloat16);
    case DataType::float32: return to_float(value);
    case DataType::float64: return value;
    case DataType::fp8_e4m3: return decode(encode(value, kE4M3), kE4M3);
    case DataType::fp8_e5m2: return decode(encode(value, kE5M2), kE5M2);
  }
  throw std::invalid_argument("unknown DataType");
}

}  // namespace redline
