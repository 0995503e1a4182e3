// Sizes and numbers as users type them: binary suffixes, fractions that land
// on whole bytes, and errors that name the flag and the value.
#include "harness/core/units.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "harness/core/usage_error.hpp"
#include "tests/support.hpp"

namespace redline {
namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = KiB * 1024;
constexpr std::uint64_t GiB = MiB * 1024;
constexpr std::uint64_t TiB = GiB * 1024;

// Runs `f`, expects a UsageError, and returns its message.
template <typename F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UsageError";
  return "";
}

TEST(ParseSize, PlainNumberIsBytes) {
  EXPECT_EQ(parse_size("-b", "8"), 8u);
  EXPECT_EQ(parse_size("-b", "0"), 0u);
  EXPECT_EQ(parse_size("-b", "1000"), 1000u);
}

TEST(ParseSize, SuffixesAreBinary) {
  EXPECT_EQ(parse_size("-b", "4K"), 4 * KiB);
  EXPECT_EQ(parse_size("-b", "64M"), 64 * MiB);
  EXPECT_EQ(parse_size("-b", "8G"), 8 * GiB);
  EXPECT_EQ(parse_size("-b", "2T"), 2 * TiB);
}

TEST(ParseSize, SuffixesAreCaseInsensitive) {
  EXPECT_EQ(parse_size("-b", "4k"), 4 * KiB);
  EXPECT_EQ(parse_size("-b", "64m"), 64 * MiB);
  EXPECT_EQ(parse_size("-b", "8g"), 8 * GiB);
}

TEST(ParseSize, OptionalByteSuffixReadsTheSame) {
  EXPECT_EQ(parse_size("-b", "64MiB"), 64 * MiB);
  EXPECT_EQ(parse_size("-b", "64MB"), 64 * MiB);
  EXPECT_EQ(parse_size("-b", "4KB"), 4 * KiB);
  EXPECT_EQ(parse_size("-b", "8GiB"), 8 * GiB);
  EXPECT_EQ(parse_size("-b", "512B"), 512u);
}

TEST(ParseSize, FractionWithSuffixThatIsWholeBytes) {
  EXPECT_EQ(parse_size("-b", "1.5K"), 1536u);
  EXPECT_EQ(parse_size("-b", "0.5M"), 512 * KiB);
  EXPECT_EQ(parse_size("-b", "2.25G"), 2 * GiB + GiB / 4);
}

TEST(ParseSize, FractionThatIsNotWholeBytesIsRejected) {
  const std::string what = usage_error_of([] { parse_size("-b", "1.1K"); });
  EXPECT_CONTAINS(what, "-b");
  EXPECT_CONTAINS(what, "1.1K");
  EXPECT_CONTAINS(what, "whole");
  usage_error_of([] { parse_size("-b", "0.5"); });
}

TEST(ParseSize, ErrorNamesFlagAndValue) {
  try {
    parse_size("-b", "12Q");
    FAIL() << "12Q parsed";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_CONTAINS(what, "-b");
    EXPECT_CONTAINS(what, "12Q");
    EXPECT_EQ(e.flag(), "-b");
    EXPECT_EQ(e.value(), "12Q");
  }
}

TEST(ParseSize, RejectsMalformedText) {
  for (const char* bad : {"", "K", "MiB", "abc", "4KK", "4 K", " 4K", "4K ", "1e", "--4", "0x10", "4Z"}) {
    SCOPED_TRACE(bad);
    const std::string what = usage_error_of([&] { parse_size("--maxbytes", bad); });
    EXPECT_CONTAINS(what, "--maxbytes");
    EXPECT_CONTAINS(what, std::string("'") + bad + "'");
  }
}

TEST(ParseSize, RejectsNegative) {
  const std::string what = usage_error_of([] { parse_size("-e", "-4K"); });
  EXPECT_CONTAINS(what, "-e");
  EXPECT_CONTAINS(what, "-4K");
  EXPECT_CONTAINS(what, "negative");
  usage_error_of([] { parse_size("-e", "-1"); });
}

TEST(ParseSize, RejectsOverflow) {
  // 2^64 bytes does not fit in 64 bits.
  const std::string what = usage_error_of([] { parse_size("-e", "16777216T"); });
  EXPECT_CONTAINS(what, "-e");
  EXPECT_CONTAINS(what, "16777216T");
  EXPECT_CONTAINS(what, "too large");
  usage_error_of([] { parse_size("-e", "99999999999999999999999"); });
  usage_error_of([] { parse_size("-e", "1e400"); });
}

TEST(ParseSize, LargestSuffixedValuesThatFit) {
  EXPECT_EQ(parse_size("-e", "8388607T"), 8388607 * TiB);
  EXPECT_EQ(parse_size("-e", "16777215T"), 16777215 * TiB);
}

TEST(ParseCount, AcceptsWholeNumbers) {
  EXPECT_EQ(parse_count("-n", "0"), 0);
  EXPECT_EQ(parse_count("-n", "20"), 20);
  EXPECT_EQ(parse_count("-n", "9223372036854775807"), std::numeric_limits<std::int64_t>::max());
}

TEST(ParseCount, RejectsSuffixesFractionsAndJunk) {
  for (const char* bad : {"", "4K", "1.5", "abc", "12x", " 3"}) {
    const std::string what = usage_error_of([&] { parse_count("-n", bad); });
    EXPECT_CONTAINS(what, "-n");
    EXPECT_CONTAINS(what, std::string("'") + bad + "'");
  }
}

TEST(ParseCount, RejectsNegativeAndTooLarge) {
  std::string what = usage_error_of([] { parse_count("-w", "-3"); });
  EXPECT_CONTAINS(what, "-w");
  EXPECT_CONTAINS(what, "-3");
  EXPECT_CONTAINS(what, "negative");
  what = usage_error_of([] { parse_count("-w", "9223372036854775808"); });
  EXPECT_CONTAINS(what, "9223372036854775808");
  EXPECT_CONTAINS(what, "too large");
}

TEST(ParseNumber, AcceptsFiniteNumbers) {
  EXPECT_DOUBLE_EQ(parse_number("--target", "0.02"), 0.02);
  EXPECT_DOUBLE_EQ(parse_number("--target", "-1.5"), -1.5);
  EXPECT_DOUBLE_EQ(parse_number("--target", "1e3"), 1000.0);
  EXPECT_DOUBLE_EQ(parse_number("--target", "7"), 7.0);
}

TEST(ParseNumber, RejectsJunkAndNonFinite) {
  for (const char* bad : {"", "abc", "1.5x", "inf", "nan", "1e400"}) {
    const std::string what = usage_error_of([&] { parse_number("--target", bad); });
    EXPECT_CONTAINS(what, "--target");
    EXPECT_CONTAINS(what, std::string("'") + bad + "'");
  }
}

TEST(RequirePositive, ZeroAndNegativeAndNaNFail) {
  EXPECT_NO_THROW(require_positive("-i", "1", 1));
  EXPECT_NO_THROW(require_positive("-i", "0.001", 0.001));
  const std::string what = usage_error_of([] { require_positive("-i", "0", 0); });
  EXPECT_CONTAINS(what, "-i");
  EXPECT_CONTAINS(what, "'0'");
  usage_error_of([] { require_positive("-i", "-2", -2); });
  usage_error_of([] { require_positive("-i", "nan", std::nan("")); });
}

TEST(RequireInRange, BoundsAreInclusive) {
  EXPECT_NO_THROW(require_in_range("--pct", "0", 0, 0, 100));
  EXPECT_NO_THROW(require_in_range("--pct", "100", 100, 0, 100));
  EXPECT_NO_THROW(require_in_range("--pct", "50", 50, 0, 100));
  const std::string what = usage_error_of([] { require_in_range("--pct", "101", 101, 0, 100); });
  EXPECT_CONTAINS(what, "--pct");
  EXPECT_CONTAINS(what, "'101'");
  EXPECT_CONTAINS(what, "between 0 and 100");
  usage_error_of([] { require_in_range("--pct", "-1", -1, 0, 100); });
}

TEST(RequireInRange, FractionalBoundsAreStatedAsTheyAre) {
  // Rounded to whole numbers, 0.001 read "between 0 and ...", which 0 is not.
  const std::string what = usage_error_of([] { require_in_range("--busbw", "1e-300", 1e-300, 0.001, 100000); });
  EXPECT_CONTAINS(what, "must be between 0.001 and 100000");
}

TEST(FormatGeneral, SignificantDigitsAndAnExponentOnlyWhenLarge) {
  EXPECT_EQ(format_general(86400000, 15), "86400000");
  EXPECT_EQ(format_general(0.001, 15), "0.001");
  EXPECT_EQ(format_general(1e15, 15), "1e+15");
  EXPECT_EQ(format_general(1.953125e297, 4), "1.953e+297");
}

TEST(FormatSignificant, FixedPointAtAnyMagnitude) {
  EXPECT_EQ(format_significant(0.04123, 3), "0.0412");
  EXPECT_EQ(format_significant(1.234, 3), "1.23");
  EXPECT_EQ(format_significant(12.34, 3), "12.3");
  EXPECT_EQ(format_significant(456.7, 3), "457");
  EXPECT_EQ(format_significant(1234.4, 3), "1234");  // digits before the point are kept, no exponent
  EXPECT_EQ(format_significant(0.09996, 3), "0.100");  // rounding into the next decade keeps 3 figures
  EXPECT_EQ(format_significant(-2.5, 3), "-2.50");
  EXPECT_EQ(format_significant(0, 3), "0");
}

TEST(FormatSize, ExactMultiplesHaveNoDecimals) {
  EXPECT_EQ(format_size(0), "0");
  EXPECT_EQ(format_size(8), "8");
  EXPECT_EQ(format_size(1023), "1023");
  EXPECT_EQ(format_size(1024), "1K");
  EXPECT_EQ(format_size(4 * KiB), "4K");
  EXPECT_EQ(format_size(64 * MiB), "64M");
  EXPECT_EQ(format_size(8 * GiB), "8G");
  EXPECT_EQ(format_size(3 * TiB), "3T");
  // T is the largest suffix: bigger sizes stay in T.
  EXPECT_EQ(format_size(2048 * TiB), "2048T");
}

TEST(FormatSize, FractionsKeepUpToTwoDecimals) {
  EXPECT_EQ(format_size(1536), "1.5K");
  EXPECT_EQ(format_size(1280), "1.25K");
  EXPECT_EQ(format_size(MiB + MiB / 4), "1.25M");
  EXPECT_EQ(format_size(GiB / 2 * 3), "1.5G");
}

TEST(FormatSize, RoundTripsThroughParseSize) {
  // Every size that format_size can print exactly: plain byte counts below
  // 1K and multiples of a quarter unit.
  for (std::uint64_t b = 0; b < 1024; ++b) EXPECT_EQ(parse_size("-b", format_size(b)), b) << b;
  for (std::uint64_t unit : {KiB, MiB, GiB, TiB})
    for (std::uint64_t quarters = 4; quarters < 4 * 1024; quarters += 3) {
      const std::uint64_t bytes = quarters * (unit / 4);
      EXPECT_EQ(parse_size("-b", format_size(bytes)), bytes) << format_size(bytes);
    }
  for (int shift = 0; shift < 63; ++shift) {
    const std::uint64_t bytes = std::uint64_t{1} << shift;
    EXPECT_EQ(parse_size("-b", format_size(bytes)), bytes) << format_size(bytes);
  }
}

TEST(FormatNumber, FixedDigitsAndSpecialValues) {
  EXPECT_EQ(format_number(3.14159, 2), "3.14");
  EXPECT_EQ(format_number(2.0, 0), "2");
  EXPECT_EQ(format_number(-0.25, 3), "-0.250");
  EXPECT_EQ(format_number(std::nan(""), 2), "nan");
  EXPECT_EQ(format_number(std::numeric_limits<double>::infinity(), 2), "inf");
  EXPECT_EQ(format_number(-std::numeric_limits<double>::infinity(), 2), "-inf");
}

}  // namespace
}  // namespace redline
