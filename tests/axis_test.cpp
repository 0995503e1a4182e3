// Size axes as users write them: lists, linear and geometric ranges, with
// or without size suffixes. Every error names the flag and the value.
#include "harness/core/axis.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "harness/core/usage_error.hpp"
#include "tests/support.hpp"

namespace redline {
namespace {

using Values = std::vector<std::int64_t>;

std::string axis_error(const std::string& flag, const std::string& text, AxisUnit unit = AxisUnit::count) {
  try {
    parse_axis(flag, text, unit);
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UsageError for '" << text << "'";
  return "";
}

void expect_names_flag_and_value(const std::string& flag, const std::string& text, const std::string& what) {
  EXPECT_CONTAINS(what, flag);
  EXPECT_CONTAINS(what, text);
}

TEST(ParseAxis, ValuesAboveTheLimitAreRefused) {
  // Beyond 2^50 the range arithmetic could overflow: a clear error instead.
  EXPECT_THROW(parse_axis("--batch-sizes", "1:9223372036854775807:4611686018427387904", AxisUnit::count), UsageError);
  EXPECT_THROW(parse_axis("--sizes", "1:8192T:x2", AxisUnit::bytes), UsageError);
  EXPECT_NO_THROW(parse_axis("--sizes", "1:1T:x2", AxisUnit::bytes));
}

TEST(ParseCountAxisBetween, EveryValueInRangeOrTheFlagIsNamed) {
  EXPECT_EQ(parse_count_axis_between("--batch", "1:8:x2", 1, 8), (Values{1, 2, 4, 8}));
  for (const char* text : {"0,2", "2,9", "0:4", "4:16:x2"}) {
    try {
      parse_count_axis_between("--batch", text, 1, 8);
      ADD_FAILURE() << "expected a UsageError for '" << text << "'";
    } catch (const UsageError& e) {
      expect_names_flag_and_value("--batch", text, e.what());
      EXPECT_CONTAINS(std::string(e.what()), "between 1 and 8");
    }
  }
}

TEST(ParseAxis, GeometricWithTooManyPointsIsRefused) {
  EXPECT_THROW(parse_axis("--batch-sizes", "1:1000000000000:x1.0000001", AxisUnit::count), UsageError);
}

TEST(ParseAxis, List) {
  EXPECT_EQ(parse_axis("--batch", "1,2,4,8", AxisUnit::count), (Values{1, 2, 4, 8}));
  EXPECT_EQ(parse_axis("--batch", "16", AxisUnit::count), (Values{16}));
}

TEST(ParseAxis, ListIsSortedAndDuplicatesRemoved) {
  EXPECT_EQ(parse_axis("--batch", "8,1,4,4,2,8", AxisUnit::count), (Values{1, 2, 4, 8}));
}

TEST(ParseAxis, Linear) {
  EXPECT_EQ(parse_axis("--batch", "8:64:8", AxisUnit::count), (Values{8, 16, 24, 32, 40, 48, 56, 64}));
  // The stop is included only when a step lands on it.
  EXPECT_EQ(parse_axis("--batch", "1:10:4", AxisUnit::count), (Values{1, 5, 9}));
  EXPECT_EQ(parse_axis("--batch", "5:5:1", AxisUnit::count), (Values{5}));
  EXPECT_EQ(parse_axis("--batch", "0:3:1", AxisUnit::count), (Values{0, 1, 2, 3}));
}

TEST(ParseAxis, StartStopStepsByOne) {
  EXPECT_EQ(parse_axis("--m", "1020:1025", AxisUnit::count), (Values{1020, 1021, 1022, 1023, 1024, 1025}));
  EXPECT_EQ(parse_axis("--m", "7:7", AxisUnit::count), (Values{7}));
}

TEST(ParseAxis, GeometricFactorTwo) {
  EXPECT_EQ(parse_axis("--batch", "1:1024:x2", AxisUnit::count),
            (Values{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}));
  EXPECT_EQ(parse_axis("--batch", "3:100:x2", AxisUnit::count), (Values{3, 6, 12, 24, 48, 96}));
  EXPECT_EQ(parse_axis("--batch", "1:1:x2", AxisUnit::count), (Values{1}));
}

TEST(ParseAxis, GeometricStarIsTheSameAsX) {
  EXPECT_EQ(parse_axis("--batch", "1:16:*2", AxisUnit::count), parse_axis("--batch", "1:16:x2", AxisUnit::count));
}

TEST(ParseAxis, GeometricNonIntegerFactorRoundsUp) {
  // 1, 1.5->2, 3, 4.5->5, 7.5->8, 12, 18, (27 is past 20)
  EXPECT_EQ(parse_axis("--batch", "1:20:x1.5", AxisUnit::count), (Values{1, 2, 3, 5, 8, 12, 18}));
}

TEST(ParseAxis, GeometricExactProductsAreNotRoundedPast) {
  // 50 x 1.1 is 55, computed in binary floating point as 55.00000000000001:
  // it must not round up to 56. Then 60.5 -> 61, 67.1 -> 68.
  EXPECT_EQ(parse_axis("--batch", "50:70:x1.1", AxisUnit::count), (Values{50, 55, 61, 68}));
  // 25 x 2.2 = 55, 55 x 2.2 = 121 (both a hair above in binary).
  EXPECT_EQ(parse_axis("--batch", "25:200:x2.2", AxisUnit::count), (Values{25, 55, 121}));
  // 5 x 1.2 = 6, 6 x 1.2 = 7.2 -> 8, 8 x 1.2 = 9.6 -> 10.
  EXPECT_EQ(parse_axis("--batch", "5:10:x1.2", AxisUnit::count), (Values{5, 6, 8, 10}));
}

TEST(GeometricAxis, SmallFactorStillGrowsByAtLeastOne) {
  EXPECT_EQ(geometric_axis(1, 5, 1.0001), (Values{1, 2, 3, 4, 5}));
  EXPECT_EQ(geometric_axis(7, 7, 3), (Values{7}));
  EXPECT_TRUE(geometric_axis(8, 4, 2).empty());
}

TEST(ParseAxis, SizesWithSuffixes) {
  EXPECT_EQ(parse_axis("-b", "4K:64K:x2", AxisUnit::bytes), (Values{4096, 8192, 16384, 32768, 65536}));
  EXPECT_EQ(parse_axis("-b", "4K:16K:4K", AxisUnit::bytes), (Values{4096, 8192, 12288, 16384}));
  EXPECT_EQ(parse_axis("-b", "1.5K,64MiB,8", AxisUnit::bytes), (Values{8, 1536, 64ll << 20}));
  // 1K and 1024 are the same size: listed once.
  EXPECT_EQ(parse_axis("-b", "1K,2K,1024", AxisUnit::bytes), (Values{1024, 2048}));
  EXPECT_EQ(parse_axis("-b", "8:1G:x1024", AxisUnit::bytes), (Values{8, 8192, 8 << 20}));
}

TEST(ParseAxis, CountsDoNotTakeSuffixes) {
  expect_names_flag_and_value("--batch", "4K", axis_error("--batch", "4K,8K"));
}

TEST(ParseAxis, EmptyAxisNamesTheFlag) {
  const std::string what = axis_error("--batch", "");
  EXPECT_CONTAINS(what, "--batch");
  EXPECT_CONTAINS(what, "empty");
}

TEST(ParseAxis, BadListElementNamesFlagAndElement) {
  expect_names_flag_and_value("--batch", "abc", axis_error("--batch", "1,abc,4"));
  EXPECT_CONTAINS(axis_error("--batch", "1,,4"), "--batch");
  expect_names_flag_and_value("--batch", "-2", axis_error("--batch", "-2,4"));
}

// A bad item names the whole axis too: ":8" was refused as "--batch ''",
// which read as an empty flag.
TEST(ParseAxis, ABadItemNamesTheWholeAxisAndTheItem) {
  for (const std::string text : {":8", "8:", "1::2", "1,"})
    EXPECT_CONTAINS(axis_error("--batch", text), "--batch '" + text + "': has an empty item");
  EXPECT_CONTAINS(axis_error("--batch", "1:8:-1"), "--batch '1:8:-1': item '-1': ");
  EXPECT_CONTAINS(axis_error("--batch", "1,abc"), "--batch '1,abc': item 'abc': expected a whole number");
}

TEST(ParseAxis, RangeWithWrongPartCount) {
  for (const std::string text : {"1:8:2:4", "1:8:2:4:5"}) {
    const std::string what = axis_error("--batch", text);
    expect_names_flag_and_value("--batch", text, what);
    EXPECT_CONTAINS(what, "start:stop:step");
  }
}

TEST(ParseAxis, StopBelowStart) {
  for (const std::string text : {"64:8:8", "64:8"}) {
    const std::string what = axis_error("--batch", text);
    expect_names_flag_and_value("--batch", text, what);
    EXPECT_CONTAINS(what, "below");
  }
}

TEST(ParseAxis, BadGeometricFactor) {
  for (const std::string text : {"1:8:x1", "1:8:x0.5", "1:8:x-2"}) {
    const std::string what = axis_error("--batch", text);
    expect_names_flag_and_value("--batch", text, what);
    EXPECT_CONTAINS(what, "greater than 1");
  }
  expect_names_flag_and_value("--batch", "abc", axis_error("--batch", "1:8:xabc"));
  EXPECT_CONTAINS(axis_error("--batch", "1:8:x"), "--batch");
}

TEST(ParseAxis, GeometricMustStartAtOne) {
  const std::string what = axis_error("--batch", "0:8:x2");
  expect_names_flag_and_value("--batch", "0:8:x2", what);
  EXPECT_CONTAINS(what, "1 or more");
}

TEST(ParseAxis, BadLinearStep) {
  const std::string what = axis_error("--batch", "1:8:0");
  expect_names_flag_and_value("--batch", "1:8:0", what);
  EXPECT_CONTAINS(what, "step");
  expect_names_flag_and_value("--batch", "two", axis_error("--batch", "1:8:two"));
}

TEST(ParseAxis, TooManyLinearPoints) {
  const std::string what = axis_error("--batch", "1:100000000:1");
  expect_names_flag_and_value("--batch", "1:100000000:1", what);
  EXPECT_CONTAINS(what, "too many");
}

TEST(ParseAxis, BadSizeInRangeNamesFlag) {
  expect_names_flag_and_value("-b", "12Q", axis_error("-b", "12Q:1G:x2", AxisUnit::bytes));
}

}  // namespace
}  // namespace redline
