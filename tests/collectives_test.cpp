// The collectives' pure C++ side: element encodings bit for bit, the data
// pattern's exactness, counts and busbw factors per collective, and every
// collective run end to end on SimBackend, an in-process reference backend
// that performs each operation with plain loops over the ranks' buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/backends/backend.hpp"
#include "collectives/ops/collective.hpp"
#include "collectives/sweep/collective_sweep.hpp"
#include "collectives/ops/data_type.hpp"
#include "collectives/faults/injected_faults.hpp"
#include "collectives/sweep/point_runner.hpp"
#include "collectives/ops/verify.hpp"
#include "harness/core/interrupt.hpp"
#include "tests/support.hpp"

namespace redline {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Raw bits of one element stored as `type`.
std::uint32_t bits_of(double value, DataType type) {
  std::uint64_t buffer = 0;
  store_element(&buffer, type, 0, value);
  std::uint32_t bits = 0;
  std::memcpy(&bits, &buffer, info(type).bytes);
  return bits;
}

// The value of raw bits read as `type`.
double value_of(std::uint32_t bits, DataType type) {
  std::uint64_t buffer = 0;
  std::memcpy(&buffer, &bits, info(type).bytes);
  return load_element(&buffer, type, 0);
}

std::vector<DataType> floating_types() {
  std::vector<DataType> out;
  for (DataType t : all_data_types()) {
    if (info(t).is_floating) out.push_back(t);
  }
  return out;
}

// ---------------------------------------------------------------- table, names

TEST(DataTypeTable, NamesAndSizesAreNcclTests) {
  EXPECT_EQ(info(DataType::int8).name, "int8");
  EXPECT_EQ(info(DataType::int32).name, "int32");
  EXPECT_EQ(info(DataType::float16).name, "half");
  EXPECT_EQ(info(DataType::bfloat16).name, "bfloat16");
  EXPECT_EQ(info(DataType::float32).name, "float");
  EXPECT_EQ(info(DataType::float64).name, "double");
  EXPECT_EQ(info(DataType::fp8_e4m3).name, "f8e4m3");
  EXPECT_EQ(info(DataType::fp8_e5m2).name, "f8e5m2");
  EXPECT_EQ(info(DataType::int8).bytes, 1u);
  EXPECT_EQ(info(DataType::int32).bytes, 4u);
  EXPECT_EQ(info(DataType::float16).bytes, 2u);
  EXPECT_EQ(info(DataType::bfloat16).bytes, 2u);
  EXPECT_EQ(info(DataType::float32).bytes, 4u);
  EXPECT_EQ(info(DataType::float64).bytes, 8u);
  EXPECT_EQ(info(DataType::fp8_e4m3).bytes, 1u);
  EXPECT_EQ(info(DataType::fp8_e5m2).bytes, 1u);
  for (DataType t : all_data_types()) EXPECT_EQ(info(t).type, t);
}

TEST(DataTypeTable, OrderIsNcclTests) {
  const std::vector<DataType> want = {DataType::int8,    DataType::int32,    DataType::float16,
                                      DataType::float32, DataType::float64,  DataType::bfloat16,
                                      DataType::fp8_e4m3, DataType::fp8_e5m2};
  EXPECT_EQ(all_data_types(), want);
  const std::vector<ReduceOp> ops = {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min, ReduceOp::avg};
  EXPECT_EQ(all_reduce_ops(), ops);
}

TEST(DataTypeTable, LimitsAndTolerances) {
  EXPECT_EQ(info(DataType::int8).exact_integer_limit, 127);
  EXPECT_EQ(info(DataType::int32).exact_integer_limit, 2147483647);
  EXPECT_EQ(info(DataType::float16).exact_integer_limit, 2048);
  EXPECT_EQ(info(DataType::bfloat16).exact_integer_limit, 256);
  EXPECT_EQ(info(DataType::float32).exact_integer_limit, 1 << 24);
  EXPECT_EQ(info(DataType::float64).exact_integer_limit, std::int64_t{1} << 53);
  EXPECT_EQ(info(DataType::fp8_e4m3).exact_integer_limit, 16);
  EXPECT_EQ(info(DataType::fp8_e5m2).exact_integer_limit, 8);
  EXPECT_EQ(info(DataType::int8).tolerance, 0.0);
  EXPECT_EQ(info(DataType::int32).tolerance, 0.0);
  EXPECT_EQ(info(DataType::float16).tolerance, std::ldexp(1.0, -10));
  EXPECT_EQ(info(DataType::bfloat16).tolerance, std::ldexp(1.0, -7));
  EXPECT_EQ(info(DataType::float32).tolerance, std::ldexp(1.0, -23));
  EXPECT_EQ(info(DataType::float64).tolerance, std::ldexp(1.0, -52));
  EXPECT_EQ(info(DataType::fp8_e4m3).tolerance, 0.125);
  EXPECT_EQ(info(DataType::fp8_e5m2).tolerance, 0.25);
  EXPECT_FALSE(info(DataType::int8).is_floating);
  EXPECT_TRUE(info(DataType::fp8_e5m2).is_floating);
}

// The limit is what the name says: every integer up to it is exact, the next
// one is not (floating types), or it is the type's maximum (integers).
TEST(DataTypeTable, ExactIntegerLimitIsTight) {
  for (DataType t : all_data_types()) {
    SCOPED_TRACE(std::string(info(t).name));
    const std::int64_t limit = info(t).exact_integer_limit;
    const auto top = static_cast<double>(limit);
    EXPECT_EQ(round_to_type(top, t), top);
    EXPECT_EQ(round_to_type(-top, t), -top);
    EXPECT_EQ(round_to_type(top - 1, t), top - 1);
    if (t == DataType::float64) {
      EXPECT_EQ(top + 1, top);  // 2^53 + 1 already needs more than a double
    } else if (info(t).is_floating) {
      EXPECT_NE(round_to_type(top + 1, t), top + 1);
    } else {
      EXPECT_EQ(round_to_type(top + 1, t), top);  // clamps
    }
    if (limit <= 4096) {
      for (std::int64_t k = -limit; k <= limit; ++k) {
        ASSERT_EQ(round_to_type(static_cast<double>(k), t), static_cast<double>(k)) << k;
      }
    }
  }
}

TEST(ParseDataType, NcclTestsNamesAndAliases) {
  for (DataType t : all_data_types()) EXPECT_EQ(parse_data_type(info(t).name), t);
  EXPECT_EQ(parse_data_type("float32"), DataType::float32);
  EXPECT_EQ(parse_data_type("fp32"), DataType::float32);
  EXPECT_EQ(parse_data_type("f32"), DataType::float32);
  EXPECT_EQ(parse_data_type("float16"), DataType::float16);
  EXPECT_EQ(parse_data_type("fp16"), DataType::float16);
  EXPECT_EQ(parse_data_type("f16"), DataType::float16);
  EXPECT_EQ(parse_data_type("bf16"), DataType::bfloat16);
  EXPECT_EQ(parse_data_type("float64"), DataType::float64);
  EXPECT_EQ(parse_data_type("fp64"), DataType::float64);
  EXPECT_EQ(parse_data_type("f64"), DataType::float64);
  EXPECT_EQ(parse_data_type("fp8_e4m3"), DataType::fp8_e4m3);
  EXPECT_EQ(parse_data_type("e4m3"), DataType::fp8_e4m3);
  EXPECT_EQ(parse_data_type("fp8e4m3"), DataType::fp8_e4m3);
  EXPECT_EQ(parse_data_type("fp8_e5m2"), DataType::fp8_e5m2);
  EXPECT_EQ(parse_data_type("e5m2"), DataType::fp8_e5m2);
  EXPECT_EQ(parse_data_type("fp8e5m2"), DataType::fp8_e5m2);
  EXPECT_EQ(parse_data_type("int"), DataType::int32);
  EXPECT_EQ(parse_data_type("int32_t"), DataType::int32);
  EXPECT_EQ(parse_data_type("int8_t"), DataType::int8);
  EXPECT_EQ(parse_data_type("BF16"), DataType::bfloat16);
}

TEST(ParseDataType, UnknownIsNullopt) {
  EXPECT_EQ(parse_data_type(""), std::nullopt);
  EXPECT_EQ(parse_data_type("all"), std::nullopt);
  EXPECT_EQ(parse_data_type("uint8"), std::nullopt);
  EXPECT_EQ(parse_data_type("float "), std::nullopt);
  EXPECT_EQ(parse_data_type("fp8"), std::nullopt);
}

TEST(ParseReduceOp, NamesRoundTrip) {
  for (ReduceOp op : all_reduce_ops()) EXPECT_EQ(parse_reduce_op(to_string(op)), op);
  EXPECT_EQ(to_string(ReduceOp::sum), "sum");
  EXPECT_EQ(to_string(ReduceOp::prod), "prod");
  EXPECT_EQ(to_string(ReduceOp::max), "max");
  EXPECT_EQ(to_string(ReduceOp::min), "min");
  EXPECT_EQ(to_string(ReduceOp::avg), "avg");
  EXPECT_EQ(parse_reduce_op("mean"), std::nullopt);
  EXPECT_EQ(parse_reduce_op("all"), std::nullopt);
  EXPECT_EQ(parse_reduce_op(""), std::nullopt);
}

// ------------------------------------------------------------------- encodings

TEST(Encoding, HalfKnownBits) {
  const DataType h = DataType::float16;
  EXPECT_EQ(bits_of(1.0, h), 0x3C00u);
  EXPECT_EQ(bits_of(-2.0, h), 0xC000u);
  EXPECT_EQ(bits_of(0.5, h), 0x3800u);
  EXPECT_EQ(bits_of(65504.0, h), 0x7BFFu);         // largest finite
  EXPECT_EQ(bits_of(std::ldexp(1.0, -14), h), 0x0400u);  // smallest normal
  EXPECT_EQ(bits_of(std::ldexp(1.0, -24), h), 0x0001u);  // smallest subnormal
  EXPECT_EQ(bits_of(0.0, h), 0x0000u);
  EXPECT_EQ(bits_of(-0.0, h), 0x8000u);
  EXPECT_EQ(bits_of(kInf, h), 0x7C00u);
  EXPECT_EQ(bits_of(-kInf, h), 0xFC00u);
  EXPECT_EQ(bits_of(65520.0, h), 0x7C00u);  // halfway above the largest: rounds to infinity
  EXPECT_EQ(bits_of(65519.0, h), 0x7BFFu);
  EXPECT_EQ(bits_of(std::ldexp(1.0, -25), h), 0x0000u);  // halfway to the smallest subnormal: even is 0
  const std::uint32_t nan = bits_of(kNaN, h);
  EXPECT_EQ(nan & 0x7C00u, 0x7C00u);
  EXPECT_NE(nan & 0x03FFu, 0u);
  EXPECT_TRUE(std::isnan(value_of(0x7E00, h)));
  EXPECT_EQ(value_of(0x3555, h), 0.333251953125);
}

TEST(Encoding, Bfloat16KnownBits) {
  const DataType b = DataType::bfloat16;
  EXPECT_EQ(bits_of(1.0, b), 0x3F80u);
  EXPECT_EQ(bits_of(-1.0, b), 0xBF80u);
  EXPECT_EQ(bits_of(256.0, b), 0x4380u);
  EXPECT_EQ(bits_of(kInf, b), 0x7F80u);
  EXPECT_EQ(bits_of(std::ldexp(1.0, -133), b), 0x0001u);  // smallest subnormal
  EXPECT_EQ(bits_of(3.3895313892515355e38, b), 0x7F7Fu);  // largest finite
  EXPECT_EQ(bits_of(3.4e38, b), 0x7F80u);                 // past its halfway point: infinity
  const std::uint32_t nan = bits_of(kNaN, b);
  EXPECT_EQ(nan & 0x7F80u, 0x7F80u);
  EXPECT_NE(nan & 0x007Fu, 0u);
}

TEST(Encoding, Fp8E4M3KnownBitsAndSaturation) {
  const DataType e = DataType::fp8_e4m3;
  EXPECT_EQ(bits_of(1.0, e), 0x38u);
  EXPECT_EQ(bits_of(-1.0, e), 0xB8u);
  EXPECT_EQ(bits_of(448.0, e), 0x7Eu);
  EXPECT_EQ(bits_of(-448.0, e), 0xFEu);
  EXPECT_EQ(bits_of(std::ldexp(1.0, -6), e), 0x08u);  // smallest normal
  EXPECT_EQ(bits_of(std::ldexp(1.0, -9), e), 0x01u);  // smallest subnormal
  EXPECT_EQ(bits_of(256.0, e), 0x78u);                // exponent field 1111 holds normal numbers
  EXPECT_EQ(value_of(0x7E, e), 448.0);
  EXPECT_EQ(value_of(0x78, e), 256.0);
  // No infinity in the "fn" variant: everything beyond 448 saturates.
  EXPECT_EQ(bits_of(464.0, e), 0x7Eu);
  EXPECT_EQ(bits_of(1000.0, e), 0x7Eu);
  EXPECT_EQ(bits_of(-1e30, e), 0xFEu);
  EXPECT_EQ(bits_of(kInf, e), 0x7Eu);
  EXPECT_EQ(bits_of(-kInf, e), 0xFEu);
  EXPECT_EQ(round_to_type(500.0, e), 448.0);
  // The only NaN is S.1111.111.
  EXPECT_EQ(bits_of(kNaN, e), 0x7Fu);
  EXPECT_TRUE(std::isnan(value_of(0x7F, e)));
  EXPECT_TRUE(std::isnan(value_of(0xFF, e)));
}

TEST(Encoding, Fp8E5M2KnownBits) {
  const DataType e = DataType::fp8_e5m2;
  EXPECT_EQ(bits_of(1.0, e), 0x3Cu);
  EXPECT_EQ(bits_of(-1.0, e), 0xBCu);
  EXPECT_EQ(bits_of(57344.0, e), 0x7Bu);  // largest finite
  EXPECT_EQ(bits_of(kInf, e), 0x7Cu);
  EXPECT_EQ(bits_of(61440.0, e), 0x7Cu);  // halfway above the largest: infinity, as IEEE
  EXPECT_EQ(bits_of(std::ldexp(1.0, -16), e), 0x01u);
  EXPECT_EQ(value_of(0x7C, e), kInf);
  EXPECT_EQ(value_of(0xFC, e), -kInf);
  EXPECT_TRUE(std::isnan(value_of(0x7D, e)));
  EXPECT_TRUE(std::isnan(value_of(bits_of(kNaN, e), e)));
}

TEST(Encoding, RoundsToNearestEven) {
  // Halfway cases go to the even neighbour, everything else to the nearest.
  struct Case {
    DataType type;
    int mantissa_bits;
  };
  for (Case c : {Case{DataType::float16, 10}, Case{DataType::bfloat16, 7}, Case{DataType::float32, 23},
                 Case{DataType::fp8_e4m3, 3}, Case{DataType::fp8_e5m2, 2}}) {
    SCOPED_TRACE(std::string(info(c.type).name));
    const double ulp = std::ldexp(1.0, -c.mantissa_bits);
    EXPECT_EQ(round_to_type(1.0 + ulp / 2, c.type), 1.0);                 // tie, 1.0 is even
    EXPECT_EQ(round_to_type(1.0 + 3 * ulp / 2, c.type), 1.0 + 2 * ulp);   // tie, 1+2ulp is even
    EXPECT_EQ(round_to_type(1.0 + ulp / 2 + ulp / 64, c.type), 1.0 + ulp);  // above the tie
    EXPECT_EQ(round_to_type(-(1.0 + ulp / 2), c.type), -1.0);
    EXPECT_EQ(round_to_type(1.0 + ulp, c.type), 1.0 + ulp);
  }
  EXPECT_EQ(round_to_type(2.5, DataType::int32), 2.0);
  EXPECT_EQ(round_to_type(3.5, DataType::int32), 4.0);
  EXPECT_EQ(round_to_type(-2.5, DataType::int32), -2.0);
  EXPECT_EQ(round_to_type(2.4, DataType::int8), 2.0);
  EXPECT_EQ(round_to_type(-2.6, DataType::int8), -3.0);
}

TEST(Encoding, IntegersClamp) {
  EXPECT_EQ(round_to_type(300.0, DataType::int8), 127.0);
  EXPECT_EQ(round_to_type(-300.0, DataType::int8), -128.0);
  EXPECT_EQ(round_to_type(1e12, DataType::int32), 2147483647.0);
  EXPECT_EQ(round_to_type(-1e12, DataType::int32), -2147483648.0);
  EXPECT_EQ(round_to_type(kInf, DataType::int32), 2147483647.0);
  EXPECT_EQ(bits_of(-1.0, DataType::int8), 0xFFu);
  EXPECT_EQ(bits_of(-2.0, DataType::int32), 0xFFFFFFFEu);
}

// Every bit pattern of the small types reads and writes back unchanged (NaNs
// are canonical, so only their NaN-ness survives).
TEST(Encoding, EveryPatternRoundTrips) {
  for (DataType t : {DataType::float16, DataType::bfloat16, DataType::fp8_e4m3, DataType::fp8_e5m2,
                     DataType::int8}) {
    SCOPED_TRACE(std::string(info(t).name));
    const std::uint32_t patterns = 1u << (8 * info(t).bytes);
    for (std::uint32_t bits = 0; bits < patterns; ++bits) {
      const double v = value_of(bits, t);
      if (std::isnan(v)) {
        ASSERT_TRUE(std::isnan(value_of(bits_of(v, t), t))) << bits;
      } else {
        ASSERT_EQ(bits_of(v, t), bits) << bits;
        ASSERT_EQ(round_to_type(v, t), v) << bits;
      }
    }
  }
}

TEST(Encoding, DoubleAndFloatAreNative) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-140, 120);
  for (int k = 0; k < 20000; ++k) {
    const double d = std::ldexp(mantissa(rng), exponent(rng)) * (k % 2 ? -1 : 1);
    std::vector<char> buf(8);
    store_element(buf.data(), DataType::float32, 0, d);
    float f;
    std::memcpy(&f, buf.data(), 4);
    ASSERT_EQ(f, static_cast<float>(d)) << d;
    ASSERT_EQ(round_to_type(d, DataType::float32), static_cast<double>(static_cast<float>(d))) << d;
    store_element(buf.data(), DataType::float64, 0, d);
    ASSERT_EQ(load_element(buf.data(), DataType::float64, 0), d);
  }
  EXPECT_EQ(round_to_type(1e39, DataType::float32), kInf);
}

// bfloat16 from a float: the well-known integer rounding of the float's bits.
TEST(Encoding, Bfloat16MatchesFloatBitRounding) {
  std::mt19937 rng(11);
  for (int k = 0; k < 200000; ++k) {
    std::uint32_t fbits = rng();
    if (((fbits >> 23) & 0xFF) == 0xFF) continue;  // inf/NaN
    float f;
    std::memcpy(&f, &fbits, 4);
    const std::uint32_t want = (fbits + 0x7FFFu + ((fbits >> 16) & 1u)) >> 16;
    ASSERT_EQ(bits_of(f, DataType::bfloat16), want) << f;
  }
}

#ifdef __FLT16_MAX__
// The compiler's own half conversion (correctly rounded from double).
TEST(Encoding, HalfMatchesCompilerFloat16) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-27, 17);
  for (int k = 0; k < 200000; ++k) {
    double d = std::ldexp(mantissa(rng), exponent(rng)) * (k % 2 ? -1 : 1);
    if (k % 3 == 0) d = std::ldexp(std::round(std::ldexp(d, 12)) + 0.5, -12);  // many ties
    const _Float16 h = static_cast<_Float16>(d);
    std::uint16_t want;
    std::memcpy(&want, &h, 2);
    ASSERT_EQ(bits_of(d, DataType::float16), want) << d;
    ASSERT_EQ(value_of(want, DataType::float16), static_cast<double>(h));
  }
}
#endif

// ---------------------------------------------------------------- data pattern

CollectiveCase make_case(DataType type, ReduceOp op, int nranks, std::uint64_t seed = 1, int root = 0) {
  CollectiveCase c;
  c.type = type;
  c.op = op;
  c.nranks = nranks;
  c.seed = seed;
  c.root = root;
  return c;
}

// Reduces element i over the ranks in the type, rounding after every step,
// starting at rank `first` and going round: a real backend's arithmetic.
double reduce_in_type(std::size_t i, const CollectiveCase& c, int first) {
  double acc = input_value(i, first, c);
  for (int k = 1; k < c.nranks; ++k) {
    const double x = input_value(i, (first + k) % c.nranks, c);
    switch (c.op) {
      case ReduceOp::sum: acc = round_to_type(acc + x, c.type); break;
      case ReduceOp::prod: acc = round_to_type(acc * x, c.type); break;
      case ReduceOp::max: acc = std::max(acc, x); break;
      case ReduceOp::min: acc = std::min(acc, x); break;
      case ReduceOp::avg: ADD_FAILURE() << "avg is not exact"; break;
    }
  }
  return acc;
}

TEST(DataPattern, InputsAreNonZeroSmallIntegersExactInTheType) {
  for (DataType t : all_data_types()) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min}) {
      for (int n = 1; n <= 8; ++n) {
        SCOPED_TRACE(std::string(info(t).name) + " " + std::string(to_string(op)) + " n=" + std::to_string(n));
        const CollectiveCase c = make_case(t, op, n);
        for (int r = 0; r < n; ++r) {
          for (std::size_t i = 0; i < 500; ++i) {
            const double v = input_value(i, r, c);
            ASSERT_NE(v, 0.0);
            ASSERT_EQ(v, std::round(v));
            ASSERT_LE(std::fabs(v), 100.0);
            ASSERT_EQ(round_to_type(v, t), v);
            if (op == ReduceOp::prod) {
              ASSERT_EQ(std::fabs(v), 1.0);
            }
          }
        }
      }
    }
  }
}

// Exact in whatever order a backend reduces: forward, backward from any rank.
TEST(DataPattern, ReductionsAreExactInEveryTypeAndOrder) {
  for (DataType t : all_data_types()) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min}) {
      for (int n = 2; n <= 8; ++n) {
        SCOPED_TRACE(std::string(info(t).name) + " " + std::string(to_string(op)) + " n=" + std::to_string(n));
        const CollectiveCase c = make_case(t, op, n, 3);
        for (std::size_t i = 0; i < 1000; ++i) {
          double exact = op == ReduceOp::prod ? 1 : 0;
          double largest = -kInf, smallest = kInf;
          for (int r = 0; r < n; ++r) {
            const double x = input_value(i, r, c);
            exact = op == ReduceOp::prod ? exact * x : exact + x;
            largest = std::max(largest, x);
            smallest = std::min(smallest, x);
          }
          if (op == ReduceOp::max) exact = largest;
          if (op == ReduceOp::min) exact = smallest;
          const double want = reduced_value(i, c);
          ASSERT_EQ(want, exact) << i;
          ASSERT_EQ(reduce_in_type(i, c, static_cast<int>(i % n)), want) << i;
          ASSERT_EQ(reduce_in_type(i, c, n - 1), want) << i;
        }
      }
    }
  }
}

// Past the type's exact-integer limit (fp8 beyond 8 or 16 ranks, int8 beyond
// 127, bfloat16 beyond 256) only some ranks contribute to each element, so
// sums stay exact; every element still has a contributor.
TEST(DataPattern, SumsStayExactBeyondTheLimit) {
  for (DataType t : {DataType::fp8_e5m2, DataType::fp8_e4m3, DataType::int8, DataType::bfloat16}) {
    for (int n : {9, 17, 64, 130, 257, 1000}) {
      SCOPED_TRACE(std::string(info(t).name) + " n=" + std::to_string(n));
      const CollectiveCase c = make_case(t, ReduceOp::sum, n, 9);
      for (std::size_t i = 0; i < 300; ++i) {
        int contributors = 0;
        double exact = 0;
        for (int r = 0; r < n; ++r) {
          const double x = input_value(i, r, c);
          contributors += x != 0;
          exact += x;
        }
        ASSERT_GE(contributors, 1);
        ASSERT_LE(contributors, info(t).exact_integer_limit);
        ASSERT_EQ(reduced_value(i, c), exact);
        ASSERT_EQ(reduce_in_type(i, c, 0), exact);
        ASSERT_EQ(reduce_in_type(i, c, static_cast<int>(i % n)), exact);
      }
    }
  }
}

// Two contributors per element (one for fp8, whose 3-ulp tolerance would
// hide a dropped one of two): a dropped or doubled contribution moves
// the average beyond the tolerance.
TEST(DataPattern, AvgHasTwoSameSignedContributors) {
  for (DataType t : all_data_types()) {
    // 1024 and 8192: where fp8 e4m3's lone contributor over n fell below the
    // smallest normal, the tolerance turned absolute and hid a dropped one.
    for (int n : {1, 2, 3, 4, 7, 8, 100, 1024, 8192}) {
      SCOPED_TRACE(std::string(info(t).name) + " n=" + std::to_string(n));
      const CollectiveCase c = make_case(t, ReduceOp::avg, n);
      for (std::size_t i = 0; i < 300; ++i) {
        std::vector<double> nonzero;
        double sum = 0;
        for (int r = 0; r < n; ++r) {
          const double x = input_value(i, r, c);
          if (x != 0) nonzero.push_back(x);
          sum += x;
        }
        ASSERT_EQ(nonzero.size(), static_cast<std::size_t>(
                                     t == DataType::fp8_e4m3 || t == DataType::fp8_e5m2 ? 1 : std::min(n, 2)));
        // Whatever one contribution is dropped, a floating result leaves the
        // tolerance (an integer average over many ranks truncates to 0 or 1).
        const double want_value = reduced_value(i, c);
        for (double dropped : info(t).is_floating ? nonzero : std::vector<double>{}) {
          ASSERT_GT(std::fabs(round_to_type((sum - dropped) / n, t) - want_value),
                    allowed_error(want_value, t, ReduceOp::avg))
              << "a dropped contribution would pass";
          ASSERT_GT(std::fabs(round_to_type((sum + dropped) / n, t) - want_value),
                    allowed_error(want_value, t, ReduceOp::avg))
              << "a doubled contribution would pass";
        }
        if (nonzero.size() == 2) {
          ASSERT_EQ(nonzero[0] > 0, nonzero[1] > 0);
          ASSERT_LE(std::max(std::fabs(nonzero[0]), std::fabs(nonzero[1])),
                    2 * std::min(std::fabs(nonzero[0]), std::fabs(nonzero[1])));
        }
        // Exact in the type: within its exact integers, or (fp8's lone
        // contributor, scaled for many ranks) a value it holds exactly.
        if (t == DataType::fp8_e4m3 || t == DataType::fp8_e5m2) ASSERT_EQ(round_to_type(sum, t), sum);
        else ASSERT_LE(std::fabs(sum), static_cast<double>(info(t).exact_integer_limit));
        const double want = reduced_value(i, c);
        if (info(t).is_floating) {
          ASSERT_EQ(want, round_to_type(sum / n, t));
          ASSERT_NE(want, 0.0);
        } else {
          ASSERT_EQ(want, std::trunc(sum / n));  // NCCL's integer average
        }
      }
    }
  }
}

TEST(DataPattern, RanksSendDifferentDataAndSeedsMatter) {
  const CollectiveCase c = make_case(DataType::float32, ReduceOp::sum, 4, 1);
  const CollectiveCase other_seed = make_case(DataType::float32, ReduceOp::sum, 4, 2);
  int differs_by_rank = 0, differs_by_seed = 0;
  std::set<double> values;
  for (std::size_t i = 0; i < 1000; ++i) {
    differs_by_rank += input_value(i, 0, c) != input_value(i, 1, c);
    differs_by_seed += input_value(i, 0, c) != input_value(i, 0, other_seed);
    values.insert(input_value(i, 0, c));
    EXPECT_EQ(input_value(i, 2, c), input_value(i, 2, c));
  }
  EXPECT_GT(differs_by_rank, 950);
  EXPECT_GT(differs_by_seed, 950);
  EXPECT_GT(values.size(), 150u);  // spread over [-100, 100]
}

TEST(DataPattern, BadRanksThrow) {
  const CollectiveCase c = make_case(DataType::float32, ReduceOp::sum, 4);
  EXPECT_THROW(input_value(0, 4, c), std::invalid_argument);
  EXPECT_THROW(input_value(0, -1, c), std::invalid_argument);
  EXPECT_THROW(reduced_value(0, make_case(DataType::float32, ReduceOp::sum, 0)), std::invalid_argument);
}

// ------------------------------------------------------- counts, factors, names

std::vector<std::string> collective_names() {
  std::vector<std::string> names;
  for (const auto& c : all_collectives()) names.emplace_back(c->name());
  return names;
}

const Collective& get(std::string_view name) {
  const Collective* c = find_collective(name);
  if (!c) throw std::runtime_error("no collective " + std::string(name));
  return *c;
}

TEST(Registry, OrderAndLookup) {
  const std::vector<std::string> want = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                         "reduce",     "alltoall",   "sendrecv"};
  EXPECT_EQ(collective_names(), want);
  for (const auto& name : want) {
    ASSERT_NE(find_collective(name), nullptr) << name;
    EXPECT_EQ(find_collective(name)->name(), name);
  }
  EXPECT_EQ(find_collective("allreduce"), find_collective("all_reduce"));
  EXPECT_EQ(find_collective("allgather"), find_collective("all_gather"));
  EXPECT_EQ(find_collective("reducescatter"), find_collective("reduce_scatter"));
  EXPECT_EQ(find_collective("all_to_all"), find_collective("alltoall"));
  EXPECT_EQ(find_collective("send_recv"), find_collective("sendrecv"));
  EXPECT_EQ(find_collective("AllReduce"), find_collective("all_reduce"));
  EXPECT_EQ(find_collective("all"), nullptr);
  EXPECT_EQ(find_collective(""), nullptr);
  EXPECT_EQ(find_collective("gather"), nullptr);
}

TEST(Registry, WhatEachCollectiveUses) {
  EXPECT_TRUE(get("all_reduce").uses_op());
  EXPECT_TRUE(get("reduce_scatter").uses_op());
  EXPECT_TRUE(get("reduce").uses_op());
  EXPECT_FALSE(get("all_gather").uses_op());
  EXPECT_FALSE(get("broadcast").uses_op());
  EXPECT_FALSE(get("alltoall").uses_op());
  EXPECT_FALSE(get("sendrecv").uses_op());
  EXPECT_TRUE(get("broadcast").uses_root());
  EXPECT_TRUE(get("reduce").uses_root());
  EXPECT_FALSE(get("all_reduce").uses_root());
  EXPECT_FALSE(get("alltoall").in_place_result_defined());
  EXPECT_FALSE(get("sendrecv").in_place_result_defined());
  EXPECT_TRUE(get("all_gather").in_place_result_defined());
  EXPECT_TRUE(get("reduce_scatter").in_place_result_defined());
}

TEST(BusBandwidth, FactorsAreNcclTests) {
  struct Row {
    const char* name;
    double n1, n2, n4, n8;
  };
  for (Row row : {Row{"all_reduce", 0, 1, 1.5, 1.75}, Row{"all_gather", 0, 0.5, 0.75, 0.875},
                  Row{"reduce_scatter", 0, 0.5, 0.75, 0.875}, Row{"alltoall", 0, 0.5, 0.75, 0.875},
                  Row{"broadcast", 1, 1, 1, 1}, Row{"reduce", 1, 1, 1, 1}, Row{"sendrecv", 1, 1, 1, 1}}) {
    SCOPED_TRACE(row.name);
    const Collective& c = get(row.name);
    EXPECT_DOUBLE_EQ(c.busbw_factor(1), row.n1);
    EXPECT_DOUBLE_EQ(c.busbw_factor(2), row.n2);
    EXPECT_DOUBLE_EQ(c.busbw_factor(4), row.n4);
    EXPECT_DOUBLE_EQ(c.busbw_factor(8), row.n8);
    EXPECT_THROW(c.busbw_factor(0), std::invalid_argument);
  }
}

void expect_counts(const CollectiveCounts& got, std::size_t send, std::size_t recv, std::size_t send_off,
                   std::size_t recv_off, std::size_t param) {
  EXPECT_EQ(got.send_count, send);
  EXPECT_EQ(got.recv_count, recv);
  EXPECT_EQ(got.send_inplace_offset, send_off);
  EXPECT_EQ(got.recv_inplace_offset, recv_off);
  EXPECT_EQ(got.param_count, param);
}

TEST(Counts, PerCollectiveForThousandElementsOnFourRanks) {
  // 1024 floats: 256 per rank, already whole 16-byte lines.
  expect_counts(get("all_reduce").counts(1024, 4, 4), 1024, 1024, 0, 0, 1024);
  expect_counts(get("all_gather").counts(1024, 4, 4), 256, 1024, 256, 0, 256);
  expect_counts(get("reduce_scatter").counts(1024, 4, 4), 1024, 256, 0, 256, 256);
  expect_counts(get("broadcast").counts(1024, 4, 4), 1024, 1024, 0, 0, 1024);
  expect_counts(get("reduce").counts(1024, 4, 4), 1024, 1024, 0, 0, 1024);
  expect_counts(get("alltoall").counts(1024, 4, 4), 1024, 1024, 0, 0, 256);
  expect_counts(get("sendrecv").counts(1024, 4, 4), 1024, 1024, 0, 0, 1024);
}

// Per-rank blocks round down to whole 16-byte lines, as nccl-tests'
// (count / nranks) & -(16 / element size): 1000 floats on 3 ranks give 332
// (333 is not a multiple of 4 floats), so the table matches nccl-tests'.
TEST(Counts, PerRankBlocksRoundDownToSixteenByteLines) {
  expect_counts(get("all_gather").counts(1000, 3, 4), 332, 996, 332, 0, 332);
  expect_counts(get("reduce_scatter").counts(1000, 3, 4), 996, 332, 0, 332, 332);
  expect_counts(get("alltoall").counts(1003, 4, 4), 992, 992, 0, 0, 248);
  expect_counts(get("all_gather").counts(1000, 3, 1), 320, 960, 320, 0, 320);  // int8: 16 per line
  expect_counts(get("all_gather").counts(1000, 3, 8), 332, 996, 332, 0, 332);  // double: 2 per line
  expect_counts(get("all_gather").counts(1000, 3, 2), 328, 984, 328, 0, 328);  // half: 8 per line
  // Under one line per rank: nothing to move (the sweep skips the point).
  expect_counts(get("all_gather").counts(12, 4, 4), 0, 0, 0, 0, 0);
  // Collectives without per-rank blocks keep every element.
  expect_counts(get("all_reduce").counts(1001, 3, 4), 1001, 1001, 0, 0, 1001);
  for (std::size_t element : {1, 2, 4, 8})
    for (const char* name : {"all_gather", "reduce_scatter", "alltoall"})
      for (int nranks : {2, 3, 5, 6, 24}) {
        const CollectiveCounts c = get(name).counts(12345, nranks, element);
        EXPECT_EQ(c.param_count * element % 16, 0u) << name << " " << nranks << " ranks, " << element << " B";
        EXPECT_LE(c.param_count * static_cast<std::size_t>(nranks), 12345u);
      }
  for (const auto& c : all_collectives()) EXPECT_THROW(c->counts(100, 0, 4), std::invalid_argument);
}

// ------------------------------------------------------------------ SimBackend

// A reference backend: one process drives every rank (like -g N), calls for
// all ranks sit between group_begin and group_end, and group_end performs the
// operation with plain loops over the ranks' host buffers. Reductions round in
// the element type after every step and start at a different rank per element
// (as a ring does); avg multiplies each input by the rounded 1/n first, as
// NCCL's floating-point average does.
//
// `host_memory`: its buffers count as host memory (Backend::host_addressable),
// so the point runner writes and reads them in place, as with HostBackend.
class SimBackend final : public Backend {
 public:
  explicit SimBackend(int nranks, bool host_memory = false) : nranks_(nranks), host_memory_(host_memory) {}

  std::string name() const override { return "sim"; }
  bool rotates_buffers() const override { return true; }
  bool host_addressable() const override { return host_memory_; }
  // After the first `operations` operations, results are no longer written:
  // a broken link or kernel that leaves the output alone.
  void stop_writing_after(int operations) { writes_until_ = operations; }
  int size() const override { return nranks_; }
  int local_ranks() const override { return nranks_; }
  int rank(int local) const override { return local; }
  std::string unsupported_reason(DataType, ReduceOp) const override { return ""; }

  void* allocate(int, std::size_t bytes) override {
    memory_.push_back(std::make_unique<char[]>(std::max<std::size_t>(bytes, 1)));
    return memory_.back().get();
  }
  void release(int, void*) override {}
  void copy_in(int, void* dst, const void* src, std::size_t bytes) override { copy(dst, src, bytes); }
  void copy_out(int, void* dst, const void* src, std::size_t bytes) override { copy(dst, src, bytes); }
  // Copies between two different places (none with host memory, where the
  // runner hands over the buffer itself).
  int copies() const { return copies_; }

  void group_begin() override {
    in_group_ = true;
    ++groups_;
    calls_.clear();
  }
  void group_end() override {
    in_group_ = false;
    execute();
  }

  void all_reduce(int local, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) override {
    record({Kind::all_reduce, local, send, recv, count, type, op});
  }
  void all_gather(int local, const void* send, void* recv, std::size_t send_count, DataType type) override {
    record({Kind::all_gather, local, send, recv, send_count, type});
  }
  void reduce_scatter(int local, const void* send, void* recv, std::size_t recv_count, DataType type,
                      ReduceOp op) override {
    record({Kind::reduce_scatter, local, send, recv, recv_count, type, op});
  }
  void broadcast(int local, const void* send, void* recv, std::size_t count, DataType type, int root) override {
    record({Kind::broadcast, local, send, recv, count, type, ReduceOp::sum, root});
  }
  void reduce(int local, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
              int root) override {
    record({Kind::reduce, local, send, recv, count, type, op, root});
  }
  void all_to_all(int local, const void* send, void* recv, std::size_t count_per_peer, DataType type) override {
    record({Kind::all_to_all, local, send, recv, count_per_peer, type});
  }
  void send_recv(int local, const void* send, void* recv, std::size_t count, DataType type, int peer_to,
                 int peer_from) override {
    record({Kind::send_recv, local, send, recv, count, type, ReduceOp::sum, 0, peer_to, peer_from});
  }

  std::unique_ptr<Backend> split(int, int) override { throw std::logic_error("SimBackend does not split"); }
  void wait() override { ++waits_; }
  void abort() override {}

  int operations() const { return operations_; }
  int groups() const { return groups_; }
  int waits() const { return waits_; }
  // Local rank 0's send pointer of every operation, in order.
  const std::vector<const void*>& sends() const { return sends_; }

 private:
  enum class Kind { all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, send_recv };
  struct Call {
    Kind kind;
    int local;
    const void* send;
    void* recv;
    std::size_t count;
    DataType type;
    ReduceOp op = ReduceOp::sum;
    int root = 0;
    int peer_to = -1;
    int peer_from = -1;
  };

  void copy(void* dst, const void* src, std::size_t bytes) {
    if (dst == src) return;
    ++copies_;
    std::memcpy(dst, src, bytes);
  }

  void record(const Call& call) {
    if (in_group_) {
      calls_.push_back(call);
      return;
    }
    if (nranks_ > 1) throw std::logic_error("SimBackend drives every rank: calls go between group_begin/group_end");
    calls_.assign(1, call);  // one rank: a call outside a group runs at once, as in NCCL
    execute();
  }

  // Element `index` of every rank's send buffer, reduced.
  double reduce_at(std::size_t index, DataType type, ReduceOp op) const {
    const int first = static_cast<int>(index % static_cast<std::size_t>(nranks_));
    const double scale = round_to_type(1.0 / nranks_, type);
    auto term = [&](int r) {
      const double x = load_element(calls_[r].send, type, index);
      return op == ReduceOp::avg && info(type).is_floating ? round_to_type(x * scale, type) : x;
    };
    double acc = term(first);
    for (int k = 1; k < nranks_; ++k) {
      const double x = term((first + k) % nranks_);
      switch (op) {
        case ReduceOp::sum:
        case ReduceOp::avg: acc = round_to_type(acc + x, type); break;
        case ReduceOp::prod: acc = round_to_type(acc * x, type); break;
        case ReduceOp::max: acc = std::max(acc, x); break;
        case ReduceOp::min: acc = std::min(acc, x); break;
      }
    }
    if (op == ReduceOp::avg && !info(type).is_floating) {
      acc = static_cast<double>(static_cast<std::int64_t>(acc) / nranks_);
    }
    return acc;
  }

  void execute() {
    ++operations_;
    for (const Call& call : calls_)
      if (call.local == 0) sends_.push_back(call.send);
    if (static_cast<int>(calls_.size()) != nranks_) throw std::logic_error("not every rank called");
    std::sort(calls_.begin(), calls_.end(), [](const Call& a, const Call& b) { return a.local < b.local; });
    const Call& c0 = calls_[0];
    for (int r = 0; r < nranks_; ++r) {
      const Call& c = calls_[r];
      if (c.local != r || c.kind != c0.kind || c.count != c0.count || c.type != c0.type || c.op != c0.op ||
          c.root != c0.root) {
        throw std::logic_error("ranks disagree on the operation");
      }
    }
    const DataType type = c0.type;
    const std::size_t bytes = info(type).bytes;
    const std::size_t n = c0.count;
    const auto ranks = static_cast<std::size_t>(nranks_);
    auto copy = [&](std::vector<char>& out, std::size_t to, const void* from_buf, std::size_t from) {
      std::memcpy(out.data() + to * bytes, static_cast<const char*>(from_buf) + from * bytes, bytes);
    };
    // Results go to scratch first: in place, inputs and outputs alias.
    std::vector<std::vector<char>> out(ranks);
    std::vector<bool> writes(ranks, true);
    std::vector<char> reduced;
    if (c0.kind == Kind::all_reduce || c0.kind == Kind::reduce) {
      reduced.resize(n * bytes);
      for (std::size_t i = 0; i < n; ++i) store_element(reduced.data(), type, i, reduce_at(i, type, c0.op));
    }
    for (std::size_t r = 0; r < ranks; ++r) {
      std::vector<char>& o = out[r];
      switch (c0.kind) {
        case Kind::all_reduce:
          o = reduced;
          break;
        case Kind::all_gather:
          o.resize(n * ranks * bytes);
          for (std::size_t p = 0; p < ranks; ++p) {
            for (std::size_t j = 0; j < n; ++j) copy(o, p * n + j, calls_[p].send, j);
          }
          break;
        case Kind::reduce_scatter:
          o.resize(n * bytes);
          for (std::size_t j = 0; j < n; ++j) store_element(o.data(), type, j, reduce_at(r * n + j, type, c0.op));
          break;
        case Kind::broadcast:
          o.resize(n * bytes);
          for (std::size_t i = 0; i < n; ++i) copy(o, i, calls_[c0.root].send, i);
          break;
        case Kind::reduce:
          writes[r] = static_cast<int>(r) == c0.root;
          if (writes[r]) o = reduced;
          break;
        case Kind::all_to_all:
          o.resize(n * ranks * bytes);
          for (std::size_t p = 0; p < ranks; ++p) {
            for (std::size_t j = 0; j < n; ++j) copy(o, p * n + j, calls_[p].send, r * n + j);
          }
          break;
        case Kind::send_recv: {
          const int from = calls_[r].peer_from;
          if (from < 0 || from >= nranks_ || calls_[from].peer_to != static_cast<int>(r)) {
            throw std::logic_error("send/recv peers do not match");
          }
          o.resize(n * bytes);
          for (std::size_t i = 0; i < n; ++i) copy(o, i, calls_[from].send, i);
          break;
        }
      }
    }
    if (operations_ > writes_until_) return;
    for (std::size_t r = 0; r < ranks; ++r) {
      if (writes[r]) std::memcpy(calls_[r].recv, out[r].data(), out[r].size());
    }
  }

  int nranks_;
  bool host_memory_;
  int writes_until_ = std::numeric_limits<int>::max();
  int copies_ = 0;
  bool in_group_ = false;
  std::vector<Call> calls_;
  std::vector<std::unique_ptr<char[]>> memory_;
  int operations_ = 0;
  int groups_ = 0;
  int waits_ = 0;
  std::vector<const void*> sends_;
};

// One operation on SimBackend with buffers laid out as a benchmark lays them
// out: in place, one buffer per rank with send at send_inplace_offset x rank
// and recv at recv_inplace_offset x rank (nccl-tests' convention).
class SimRun {
 public:
  SimRun(const Collective& coll, const CollectiveCase& c, std::size_t count, bool in_place, bool run = true)
      : coll_(coll), case_(c), backend_(c.nranks), counts_(coll.counts(count, c.nranks, info(c.type).bytes)) {
    const std::size_t bytes = info(c.type).bytes;
    for (int r = 0; r < c.nranks; ++r) {
      char* send;
      char* recv;
      if (in_place) {
        const std::size_t elements = std::max(counts_.send_count, counts_.recv_count);
        char* buffer = static_cast<char*>(backend_.allocate(r, elements * bytes));
        fill_poison(buffer, elements, c.type);
        send = buffer + counts_.send_inplace_offset * static_cast<std::size_t>(r) * bytes;
        recv = buffer + counts_.recv_inplace_offset * static_cast<std::size_t>(r) * bytes;
      } else {
        send = static_cast<char*>(backend_.allocate(r, counts_.send_count * bytes));
        recv = static_cast<char*>(backend_.allocate(r, counts_.recv_count * bytes));
        fill_poison(recv, counts_.recv_count, c.type);
      }
      fill_input(send, counts_.send_count, c.type, r, c);
      send_.push_back(send);
      recv_.push_back(recv);
    }
    if (!run) return;
    backend_.group_begin();
    for (int r = 0; r < c.nranks; ++r) coll.run(backend_, r, send_[r], recv_[r], counts_, c);
    backend_.group_end();
  }

  std::size_t wrong(int rank) const {
    return count_wrong(recv_[rank], counts_.recv_count, case_.type, coll_, counts_, case_, rank);
  }
  std::size_t total_wrong() const {
    std::size_t total = 0;
    for (int r = 0; r < case_.nranks; ++r) total += wrong(r);
    return total;
  }
  void set(int rank, std::size_t i, double value) { store_element(recv_[rank], case_.type, i, value); }
  double get(int rank, std::size_t i) const { return load_element(recv_[rank], case_.type, i); }
  const CollectiveCounts& counts() const { return counts_; }
  int operations() const { return backend_.operations(); }

 private:
  const Collective& coll_;
  CollectiveCase case_;
  SimBackend backend_;
  CollectiveCounts counts_;
  std::vector<char*> send_, recv_;
};

// The heart of it: every collective, type, op, root and rank count, out of
// place and in place, gives zero wrong elements on every rank.
TEST(Simulation, EveryCollectiveTypeAndOpIsRightOnEveryRank) {
  int runs = 0;
  for (const auto& coll : all_collectives()) {
    for (DataType t : all_data_types()) {
      const std::vector<ReduceOp> ops =
          coll->uses_op() ? all_reduce_ops() : std::vector<ReduceOp>{ReduceOp::sum};
      for (ReduceOp op : ops) {
        for (int n : {1, 2, 3, 4, 5, 8}) {
          const std::vector<int> roots = coll->uses_root() ? std::vector<int>{0, n - 1} : std::vector<int>{0};
          for (int root : roots) {
            for (bool in_place : {false, true}) {
              if (in_place && !coll->in_place_result_defined()) continue;
              SCOPED_TRACE(std::string(coll->name()) + " " + std::string(info(t).name) + " " +
                           std::string(to_string(op)) + " n=" + std::to_string(n) + " root=" +
                           std::to_string(root) + (in_place ? " in-place" : " out-of-place"));
              const CollectiveCase c = make_case(t, op, n, 42, root);
              SimRun sim(*coll, c, 1000, in_place);
              ASSERT_EQ(sim.operations(), 1);
              ASSERT_GT(sim.counts().recv_count, 0u);
              for (int r = 0; r < n; ++r) ASSERT_EQ(sim.wrong(r), 0u) << "rank " << r;
              ++runs;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(runs, 1000);
}

// avg is the one inexact result: NCCL-style arithmetic (inputs times the
// rounded 1/n, then sums, all rounded in the type) stays within the stated
// tolerance for every rank count, including those 1/n is not exact for.
TEST(Simulation, AvgStaysWithinToleranceForManyRankCounts) {
  for (DataType t : floating_types()) {
    for (int n = 1; n <= 64; ++n) {
      SCOPED_TRACE(std::string(info(t).name) + " n=" + std::to_string(n));
      SimRun sim(get("all_reduce"), make_case(t, ReduceOp::avg, n, 77), 1000, false);
      ASSERT_EQ(sim.wrong(0), 0u);
      ASSERT_EQ(sim.wrong(n - 1), 0u);
    }
  }
}

// alltoall and sendrecv are not defined in place, but with a backend that
// stages its inputs (as SimBackend does) the check still holds.
TEST(Simulation, AlltoallAndSendrecvInPlaceOnAStagingBackend) {
  for (const char* name : {"alltoall", "sendrecv"}) {
    SimRun sim(get(name), make_case(DataType::float32, ReduceOp::sum, 4), 1000, true);
    EXPECT_EQ(sim.total_wrong(), 0u) << name;
  }
}

// Rank r that expects something at element i: reduce only on the root.
int checked_rank(const Collective& coll, const CollectiveCase& c) { return coll.name() == "reduce" ? c.root : 1; }

TEST(Verify, OneCorruptElementIsOneWrong) {
  for (const auto& coll : all_collectives()) {
    for (DataType t : {DataType::int8, DataType::float32, DataType::bfloat16, DataType::fp8_e4m3}) {
      SCOPED_TRACE(std::string(coll->name()) + " " + std::string(info(t).name));
      const CollectiveCase c = make_case(t, ReduceOp::sum, 4, 5, 2);
      SimRun sim(*coll, c, 1000, false);
      const int r = checked_rank(*coll, c);
      const std::size_t i = 17;
      const double good = sim.get(r, i);
      sim.set(r, i, good == 1 ? 2 : 1);
      EXPECT_EQ(sim.wrong(r), 1u);
      EXPECT_EQ(sim.total_wrong(), 1u);
      sim.set(r, i, good);
      EXPECT_EQ(sim.wrong(r), 0u);
    }
  }
}

TEST(Verify, NaNNeverPasses) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max}) {
    for (DataType t : floating_types()) {
      SCOPED_TRACE(std::string(info(t).name) + " " + std::string(to_string(op)));
      SimRun sim(get("all_reduce"), make_case(t, op, 4), 1000, false);
      sim.set(0, 3, kNaN);
      sim.set(0, 999, kNaN);
      EXPECT_EQ(sim.wrong(0), 2u);
    }
  }
  SimRun sim(get("all_gather"), make_case(DataType::float16, ReduceOp::sum, 4), 1000, false);
  sim.set(2, 0, kInf);
  EXPECT_EQ(sim.wrong(2), 1u);
}

// An output the collective never wrote keeps the poison and is counted.
TEST(Verify, UnwrittenOutputsAreWrong) {
  for (const auto& coll : all_collectives()) {
    for (DataType t : {DataType::int8, DataType::int32, DataType::float16, DataType::fp8_e5m2}) {
      SCOPED_TRACE(std::string(coll->name()) + " " + std::string(info(t).name));
      const CollectiveCase c = make_case(t, ReduceOp::sum, 4);
      SimRun sim(*coll, c, 1000, false, /*run=*/false);
      const std::size_t per_rank = sim.counts().recv_count;
      const std::size_t checked_ranks = coll->name() == "reduce" ? 1 : 4;
      EXPECT_EQ(sim.total_wrong(), per_rank * checked_ranks);
    }
  }
}

TEST(Verify, AvgToleranceIsThreeUlpsOfTheExpectedValue) {
  const CollectiveCase c = make_case(DataType::bfloat16, ReduceOp::avg, 3);
  SimRun sim(get("all_reduce"), c, 1000, false);
  ASSERT_EQ(sim.wrong(0), 0u);
  const double want = reduced_value(10, c);
  EXPECT_DOUBLE_EQ(allowed_error(want, DataType::bfloat16, ReduceOp::avg),
                   3 * info(DataType::bfloat16).tolerance * std::fabs(want));
  // Spacing of bfloat16 numbers at `want`: 2^-7 relative at most.
  const double spacing = std::ldexp(1.0, std::ilogb(want) - 7);
  sim.set(0, 10, want + 2 * spacing);
  EXPECT_EQ(sim.wrong(0), 0u);
  sim.set(0, 10, want - 2 * spacing);
  EXPECT_EQ(sim.wrong(0), 0u);
  sim.set(0, 10, want + 8 * spacing);
  EXPECT_EQ(sim.wrong(0), 1u);
  sim.set(0, 10, want * 1.5);  // a contribution missing or doubled
  EXPECT_EQ(sim.wrong(0), 1u);
}

TEST(Verify, ExactOpsHaveNoTolerance) {
  for (DataType t : all_data_types()) {
    for (ReduceOp op : all_reduce_ops()) {
      const double allowed = allowed_error(10.0, t, op);
      if (op == ReduceOp::avg && info(t).is_floating) {
        EXPECT_GT(allowed, 0.0);
        EXPECT_LE(allowed, 3 * info(t).tolerance * 10.0);
      } else {
        EXPECT_EQ(allowed, 0.0) << info(t).name << " " << to_string(op);
      }
    }
  }
  // Near zero the bound stops shrinking at the smallest normal number.
  EXPECT_EQ(allowed_error(0.0, DataType::fp8_e4m3, ReduceOp::avg), 3 * 0.125 * std::ldexp(1.0, -6));
  // A float sum one ulp off is wrong.
  const CollectiveCase c = make_case(DataType::float32, ReduceOp::sum, 4);
  SimRun sim(get("all_reduce"), c, 100, false);
  const double want = sim.get(0, 5);
  sim.set(0, 5, std::nextafter(static_cast<float>(want), 1e9f));
  EXPECT_EQ(sim.wrong(0), 1u);
}

// Large buffers are checked in chunks on several threads; every wrong element
// is still counted once.
TEST(Verify, LargeBuffersCountEveryWrongElement) {
  const std::size_t count = (std::size_t{3} << 20) + 17;
  const CollectiveCase c = make_case(DataType::bfloat16, ReduceOp::sum, 1);
  const Collective& coll = get("all_reduce");
  const CollectiveCounts counts = coll.counts(count, 1, info(c.type).bytes);
  std::vector<char> buf(count * 2);
  fill_input(buf.data(), count, c.type, 0, c);  // one rank: the sum is its own input
  EXPECT_EQ(count_wrong(buf.data(), count, c.type, coll, counts, c, 0), 0u);
  for (std::size_t i : {std::size_t{0}, std::size_t{1} << 20, (std::size_t{2} << 20) + 5, count - 1}) {
    store_element(buf.data(), c.type, i, kNaN);
  }
  EXPECT_EQ(count_wrong(buf.data(), count, c.type, coll, counts, c, 0), 4u);
  // Errors inside the worker threads reach the caller.
  EXPECT_THROW(fill_input(buf.data(), count, c.type, 1, c), std::invalid_argument);
  const CollectiveCase bad_root = make_case(c.type, c.op, 1, 1, /*root=*/5);
  EXPECT_THROW(count_wrong(buf.data(), count, c.type, get("broadcast"), counts, bad_root, 0), std::invalid_argument);
}

TEST(Verify, PoisonIsNeverExpected) {
  std::vector<char> buf(64);
  fill_poison(buf.data(), 8, DataType::int8);
  EXPECT_EQ(load_element(buf.data(), DataType::int8, 7), -128.0);
  fill_poison(buf.data(), 8, DataType::int32);
  EXPECT_EQ(load_element(buf.data(), DataType::int32, 7), -2147483648.0);
  for (DataType t : floating_types()) {
    fill_poison(buf.data(), 8, t);
    EXPECT_TRUE(std::isnan(load_element(buf.data(), t, 7))) << info(t).name;
  }
}

TEST(Verify, TypeMismatchThrows) {
  const CollectiveCase c = make_case(DataType::float32, ReduceOp::sum, 2);
  std::vector<char> buf(64);
  EXPECT_THROW(fill_input(buf.data(), 4, DataType::float16, 0, c), std::invalid_argument);
  const Collective& coll = get("all_reduce");
  EXPECT_THROW(count_wrong(buf.data(), 4, DataType::int32, coll, coll.counts(4, 2, 4), c, 0), std::invalid_argument);
}

// Timed operation i runs on the buffers shifted by i whole points, cycling
// through what the sweep's largest point allocated (nccl-tests' rotation), so
// a small point is not timed from cache; the check runs at the base.
TEST(PointRunner, OperationsRotateThroughTheBuffers) {
  SimBackend backend(2);
  const Collective& coll = get("all_reduce");
  const CollectiveCase c = make_case(DataType::float32, ReduceOp::sum, 2);
  CollectiveBuffers buffers(backend, coll, 4096, c.type);  // 16 KiB each
  PointSettings settings;
  settings.warmup_iterations = 0;
  settings.iterations = 6;
  settings.check_iterations = 1;
  int barriers = 0;
  settings.sync_ranks = [&barriers] { ++barriers; };
  const PointMeasurement m = measure_point(backend, coll, buffers, 1024, c, false, settings);  // 4 KiB points
  EXPECT_EQ(m.wrong, 0u);
  EXPECT_EQ(barriers, 1);
  const auto* base = static_cast<const char*>(buffers.send(0));
  std::vector<std::ptrdiff_t> offsets;
  for (const void* p : backend.sends()) offsets.push_back(static_cast<const char*>(p) - base);
  // One untimed operation before the clock, six timed in four slots, one checked.
  EXPECT_EQ(offsets, (std::vector<std::ptrdiff_t>{0, 0, 4096, 8192, 12288, 0, 4096, 0}));

  // In place, both sides sit in the receive buffer and rotate with it:
  // all_gather's rank 0 sends from its own block at the slot's start.
  SimBackend gather(2);
  const Collective& all_gather = get("all_gather");
  CollectiveBuffers gather_buffers(gather, all_gather, 4096, c.type);
  const PointMeasurement g = measure_point(gather, all_gather, gather_buffers, 1024, c, true, settings);
  EXPECT_EQ(g.wrong, 0u);
  const auto* recv_base = static_cast<const char*>(gather_buffers.recv(0));
  std::vector<std::ptrdiff_t> gather_offsets;
  for (const void* p : gather.sends()) gather_offsets.push_back(static_cast<const char*>(p) - recv_base);
  EXPECT_EQ(gather_offsets, (std::vector<std::ptrdiff_t>{0, 0, 4096, 8192, 12288, 0, 4096, 0}));

  // The largest point fills the buffers: nothing to rotate through.
  SimBackend full(2);
  CollectiveBuffers full_buffers(full, coll, 4096, c.type);
  measure_point(full, coll, full_buffers, 4096, c, false, settings);
  for (const void* p : full.sends()) EXPECT_EQ(p, full_buffers.send(0));
}

// A backend on host memory gets its inputs written, and its results read, in
// the buffers themselves, with no staging buffer (so the host backend holds
// what its peer loop holds); the check still catches a wrong input and an
// operation that stops writing its output, in both layouts.
TEST(PointRunner, HostMemoryIsFilledAndCheckedInPlace) {
  const Collective& coll = get("all_reduce");
  const CollectiveCase c = make_case(DataType::float32, ReduceOp::sum, 2);
  PointSettings settings;
  settings.warmup_iterations = 0;
  settings.iterations = 2;
  for (bool host_memory : {false, true}) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(std::string(host_memory ? "host memory" : "staged") + (in_place ? ", in place" : ", out of place"));
      SimBackend backend(2, host_memory);
      CollectiveBuffers buffers(backend, coll, 1024, c.type);
      EXPECT_EQ(buffers.host_side(buffers.recv(0)) == buffers.recv(0), host_memory);
      EXPECT_EQ(measure_point(backend, coll, buffers, 1024, c, in_place, settings).wrong, 0u);
      EXPECT_EQ(backend.copies() == 0, host_memory);  // staged: inputs and results are copied

      FaultPlan wrong_input;  // --inject-wrong 0: the process of rank 0 spoils each check's input
      wrong_input.wrong_rank = 0;
      const auto faults = make_injected_faults(wrong_input, 0);
      EXPECT_EQ(measure_point(backend, coll, buffers, 1024, c, in_place, settings, *faults).wrong,
                2u);  // element 0, both local ranks

      // The untimed and timed operations leave right results; the checked one writes nothing.
      SimBackend broken(2, host_memory);
      broken.stop_writing_after(1 + settings.iterations);
      CollectiveBuffers broken_buffers(broken, coll, 1024, c.type);
      EXPECT_EQ(measure_point(broken, coll, broken_buffers, 1024, c, in_place, settings).wrong, 2u * 1024);
    }
  }
}

// nccl-tests' warm-up pass: -w operations at every size from the smallest to
// the largest, doubling, with a wait after each size.
TEST(PointRunner, WarmUpRunsEverySizeFromTheSmallestToTheLargestDoubling) {
  SimBackend backend(2);
  const Collective& coll = get("all_reduce");
  const CollectiveCase c = make_case(DataType::float32, ReduceOp::sum, 2);
  CollectiveBuffers buffers(backend, coll, 4096, c.type);
  warm_up_series(backend, coll, buffers, 1000, 4096, c, 3);  // 1000, 2000 and 4000 elements
  EXPECT_EQ(backend.operations(), 9);
  EXPECT_EQ(backend.waits(), 3);
  warm_up_series(backend, coll, buffers, 1000, 4096, c, 0);  // -w 0: no warm-up at all
  EXPECT_EQ(backend.operations(), 9);
}

// One GPU per process calls NCCL without a group, as nccl-tests does, so both
// time the same calls; several always sit in one.
TEST(PointRunner, OnlySeveralLocalRanksShareAGroup) {
  const Collective& coll = get("all_reduce");
  PointSettings settings;
  settings.warmup_iterations = 2;
  settings.iterations = 4;
  for (int ranks : {1, 2}) {
    SimBackend backend(ranks);
    const CollectiveCase c = make_case(DataType::float32, ReduceOp::sum, ranks);
    CollectiveBuffers buffers(backend, coll, 1024, c.type);
    const PointMeasurement m = measure_point(backend, coll, buffers, 1024, c, false, settings);
    EXPECT_EQ(m.wrong, 0u) << ranks;
    EXPECT_EQ(backend.operations(), 2 + 1 + 4 + 1) << ranks;  // warm-up, one before the clock, timed, checked
    EXPECT_EQ(backend.groups(), ranks == 1 ? 0 : backend.operations()) << ranks;
  }
}

// --per-iter and --per-rank take their samples through the harness's policy
// with exactly -n operations on every rank: Ctrl-C during a point must not cut
// one rank's samples short, or the others would wait in an operation it never
// joins.
TEST(PointRunner, PerOperationSamplesAreExactlyTheIterationsEvenAfterCtrlC) {
  const Collective& coll = get("all_reduce");
  PointSettings settings;
  settings.warmup_iterations = 1;
  settings.iterations = 5;
  settings.check_iterations = 0;
  settings.per_iteration = true;
  settings.arrival_pass = true;
  SimBackend backend(2);
  const CollectiveCase c = make_case(DataType::float32, ReduceOp::sum, 2);
  CollectiveBuffers buffers(backend, coll, 1024, c.type);
  set_interrupted_for_testing(true);
  const PointMeasurement m = measure_point(backend, coll, buffers, 1024, c, false, settings);
  set_interrupted_for_testing(false);
  EXPECT_EQ(m.samples_seconds.size(), 5u);
  for (double s : m.samples_seconds) EXPECT_GT(s, 0);
  EXPECT_GT(m.seconds_per_operation, 0);
  EXPECT_GT(m.seconds_in_operation, 0);
  EXPECT_EQ(backend.operations(), 1 + 1 + 5 + 5);  // warm-up, one before the clock, per operation, arrival
}

TEST(Verify, ToleranceStatement) {
  EXPECT_EQ(tolerance_statement(DataType::bfloat16),
            "bfloat16: exact for sum, prod, max, min and data movement; avg within 3 x 2^-7 relative; "
            "NaN never passes");
  EXPECT_CONTAINS(tolerance_statement(DataType::fp8_e4m3), "3 x 2^-3");
  EXPECT_CONTAINS(tolerance_statement(DataType::int32), "int32: exact for every op");
}

}  // namespace
// -a: rank 0's time, the mean, the fastest rank's or the slowest's.
TEST(CombineRankTimes, EachModeAsNcclTests) {
  const std::vector<double> times = {3.0, 1.0, 8.0, 4.0};
  EXPECT_EQ(combine_rank_times(times, AverageMode::rank0), 3.0);
  EXPECT_EQ(combine_rank_times(times, AverageMode::mean), 4.0);
  EXPECT_EQ(combine_rank_times(times, AverageMode::min), 1.0);
  EXPECT_EQ(combine_rank_times(times, AverageMode::max), 8.0);
}

}  // namespace redline
