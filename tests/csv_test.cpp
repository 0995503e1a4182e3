// CSV writer and reader: RFC 4180 quoting, round trips through real files,
// errors that point at file and line, and the report's column layout.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "harness/core/atomic_file.hpp"
#include "harness/report/csv_reader.hpp"
#include "harness/report/csv_writer.hpp"
#include "harness/report/report.hpp"
#include "tests/support.hpp"

namespace redline {
namespace {

namespace fs = std::filesystem;

class CsvFileTest : public redline::testing::TempDirTest {};

std::string csv_error(std::string_view text, const std::string& source) {
  try {
    parse_csv(text, source);
  } catch (const CsvError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a CsvError for: " << text;
  return "";
}

Report sample_report() {
  Report report;
  report.tool = "gemm_bench";
  report.run_id = "20261122T123456Z-node1-42";
  report.env.timestamp_utc = "2026-11-22T12:34:56Z";
  report.env.host = "node1";
  GpuInfo gpu;
  gpu.name = "NVIDIA H100 80GB HBM3";
  report.env.gpus = {gpu, gpu};
  Row a;
  a.param("m", "4096").param("dtype", "bf16").metric("time_us", 12.5).metric("tflops", 700.25);
  Row b;
  b.param("m", "8192").param("dtype", "bf16").metric("time_us", std::nan("")).metric("tflops", 1.0 / 3);
  b.repetition = 1;
  b.status = RowStatus::oom;
  b.note = "CUDA out of memory, \"Tried\" to allocate\n2.00 GiB";
  Row c;  // a row with a parameter and a metric the others lack
  c.param("m", "1").param("layout", "tn").metric("busbw_GBps", 3.5e-7);
  report.rows = {a, b, c};
  return report;
}

TEST(CsvField, PlainFieldsAreNotQuoted) {
  EXPECT_EQ(csv_field("abc"), "abc");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("with space"), "with space");
  EXPECT_EQ(csv_field("k=v;k2=v2"), "k=v;k2=v2");
}

TEST(CsvField, QuotesCommasQuotesAndLineBreaks) {
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("\""), "\"\"\"\"");
  EXPECT_EQ(csv_field("line1\nline2"), "\"line1\nline2\"");
  EXPECT_EQ(csv_field("cr\rhere"), "\"cr\rhere\"");
}

TEST(ParseCsv, SimpleTableAndLookups) {
  const CsvTable t = parse_csv("a,b,c\n1,2,3\n4,5,6\n", "t.csv");
  EXPECT_EQ(t.header, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"4", "5", "6"}));
  EXPECT_EQ(t.column("b"), 1u);
  EXPECT_FALSE(t.column("zz").has_value());
  EXPECT_EQ(t.value(0, "c"), "3");
  EXPECT_EQ(t.value(0, "zz"), "");
  EXPECT_EQ(t.row_lines, (std::vector<std::size_t>{2, 3}));
}

// Excel's "CSV UTF-8" starts with a byte-order mark; the first column keeps its name.
TEST(ParseCsv, LeadingByteOrderMarkIsSkipped) {
  const CsvTable t = parse_csv("\xEF\xBB\xBFrun_id,x\nr1,2\n", "bom.csv");
  ASSERT_EQ(t.header.size(), 2u);
  EXPECT_EQ(t.header[0], "run_id");
  EXPECT_EQ(t.value(0, "run_id"), "r1");
}

TEST(ParseCsv, CrLfAndNoTrailingNewline) {
  const CsvTable t = parse_csv("a,b\r\n1,2\r\n3,4", "t.csv");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"3", "4"}));
}

TEST(ParseCsv, QuotedFieldsWithCommasQuotesAndNewlines) {
  const CsvTable t = parse_csv("name,note\n\"a,b\",\"x \"\"q\"\" y\"\n\"multi\nline\",\"\"\nlast,\n", "t.csv");
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"a,b", "x \"q\" y"}));
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"multi\nline", ""}));
  EXPECT_EQ(t.rows[2], (std::vector<std::string>{"last", ""}));
  // The row after the embedded line break starts on line 5.
  EXPECT_EQ(t.row_lines, (std::vector<std::size_t>{2, 3, 5}));
}

TEST(ParseCsv, WrongFieldCountNamesFileAndLine) {
  const std::string what = csv_error("a,b,c\n1,2,3\n4,5\n", "results.csv");
  EXPECT_CONTAINS(what, "results.csv:3");
  EXPECT_CONTAINS(what, "expected 3 fields, found 2");
  EXPECT_CONTAINS(csv_error("a,b\n1,2,3\n", "r.csv"), "r.csv:2");
}

TEST(ParseCsv, LineNumbersCountEmbeddedLineBreaks) {
  // The quoted field spans lines 2-3, so the bad row is on line 4.
  const std::string what = csv_error("a,b\n\"x\ny\",1\n1\n", "t.csv");
  EXPECT_CONTAINS(what, "t.csv:4");
}

TEST(ParseCsv, UnclosedQuoteNamesTheLineWhereTheRecordStarts) {
  const std::string what = csv_error("a,b\n1,2\n3,\"never closed\n4,5\n", "t.csv");
  EXPECT_CONTAINS(what, "t.csv:3");
  EXPECT_CONTAINS(what, "never closed");
}

TEST(ParseCsv, StrayQuoteInsideAnUnquotedField) {
  const std::string what = csv_error("a,b\n1,2\nab\"c,3\n", "t.csv");
  EXPECT_CONTAINS(what, "t.csv:3");
  EXPECT_CONTAINS(what, "quote");
}

TEST(ParseCsv, TextAfterAClosingQuote) {
  const std::string what = csv_error("a,b\n\"x\"y,1\n", "t.csv");
  EXPECT_CONTAINS(what, "t.csv:2");
  EXPECT_CONTAINS(what, "closing quote");
}

TEST(ParseCsv, EmptyInputHasNoHeader) {
  const std::string what = csv_error("", "empty.csv");
  EXPECT_CONTAINS(what, "empty.csv:1");
}

TEST(ParseCsv, CsvErrorCarriesTheLine) {
  try {
    parse_csv("a\n1\n2\n\"x\"\"y\",2\n", "t.csv");
    FAIL() << "accepted a row with two fields under a one-column header";
  } catch (const CsvError& e) {
    EXPECT_EQ(e.line(), 4u);
  }
}

TEST_F(CsvFileTest, WriterOutputReadsBackExactly) {
  const std::vector<std::vector<std::string>> table = {
      {"plain", "comma", "quote", "newline", "empty"},
      {"x", "a,b", "say \"hi\"", "line1\nline2", ""},
      {"crlf\r\ninside", ",", "\"\"", "\n", "  spaced  "},
  };
  std::string text;
  for (const auto& row : table) {
    for (std::size_t i = 0; i < row.size(); ++i) text += (i ? "," : "") + csv_field(row[i]);
    text += "\r\n";
  }
  const fs::path path = dir_ / "round.csv";
  write_file_atomically(path, text);
  const CsvTable t = read_csv(path);
  EXPECT_EQ(t.header, table[0]);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0], table[1]);
  EXPECT_EQ(t.rows[1], table[2]);
}

TEST_F(CsvFileTest, ReadCsvErrorsNameThePath) {
  const fs::path path = dir_ / "bad.csv";
  write_file_atomically(path, "a,b\n1,2\n3\n");
  try {
    read_csv(path);
    FAIL() << "read a malformed file";
  } catch (const CsvError& e) {
    EXPECT_CONTAINS(e.what(), path.string() + ":3");
  }
  try {
    read_csv(dir_ / "missing.csv");
    FAIL() << "read a missing file";
  } catch (const CsvError& e) {
    EXPECT_CONTAINS(e.what(), "missing.csv");
  }
}

TEST(ToCsv, HeaderColumnsInOrder) {
  const CsvTable t = parse_csv(to_csv(sample_report()), "report.csv");
  EXPECT_EQ(t.header, (std::vector<std::string>{"run_id", "timestamp_utc", "host", "gpu", "tool", "case_key",
                                                "repetition", "m", "dtype", "layout", "time_us", "tflops",
                                                "busbw_GBps", "status", "note"}));
}

TEST(ToCsv, RowsCarryRunFieldsParamsMetricsAndStatus) {
  const std::string text = to_csv(sample_report());
  EXPECT_CONTAINS(text, "\r\n");  // RFC 4180 line breaks
  const CsvTable t = parse_csv(text, "report.csv");
  ASSERT_EQ(t.rows.size(), 3u);
  for (std::size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(t.value(r, "run_id"), "20261122T123456Z-node1-42");
    EXPECT_EQ(t.value(r, "timestamp_utc"), "2026-11-22T12:34:56Z");
    EXPECT_EQ(t.value(r, "host"), "node1");
    EXPECT_EQ(t.value(r, "gpu"), "2x NVIDIA H100 80GB HBM3");
    EXPECT_EQ(t.value(r, "tool"), "gemm_bench");
  }
  EXPECT_EQ(t.value(0, "case_key"), "m=4096;dtype=bf16");
  EXPECT_EQ(t.value(0, "repetition"), "0");
  EXPECT_EQ(t.value(0, "m"), "4096");
  EXPECT_EQ(t.value(0, "layout"), "");  // not a parameter of this row
  EXPECT_EQ(t.value(0, "time_us"), "12.5");
  EXPECT_EQ(t.value(0, "tflops"), "700.25");
  EXPECT_EQ(t.value(0, "busbw_GBps"), "");
  EXPECT_EQ(t.value(0, "status"), "ok");
  EXPECT_EQ(t.value(0, "note"), "");

  EXPECT_EQ(t.value(1, "repetition"), "1");
  EXPECT_EQ(t.value(1, "time_us"), "");  // NaN: not measured
  EXPECT_EQ(std::stod(t.value(1, "tflops")), 1.0 / 3);  // full precision
  EXPECT_EQ(t.value(1, "status"), "oom");
  EXPECT_EQ(t.value(1, "note"), "CUDA out of memory, \"Tried\" to allocate\n2.00 GiB");

  EXPECT_EQ(t.value(2, "case_key"), "m=1;layout=tn");
  EXPECT_EQ(std::stod(t.value(2, "busbw_GBps")), 3.5e-7);
  EXPECT_EQ(t.value(2, "dtype"), "");
}

TEST(ToCsv, EmptyReportIsJustTheHeader) {
  Report report;
  const CsvTable t = parse_csv(to_csv(report), "r.csv");
  EXPECT_EQ(t.header, (std::vector<std::string>{"run_id", "timestamp_utc", "host", "gpu", "tool", "case_key",
                                                "repetition", "status", "note"}));
  EXPECT_TRUE(t.rows.empty());
}

// case_key joins name=value pairs with ';': a ';' in a value or a '=' in a
// name would read back as another case, so Row refuses them where they are made.
TEST(RowParam, ASemicolonOrEqualsThatWouldBreakTheCaseKeyIsRefused) {
  Row row;
  EXPECT_THROW(row.param("shape", "a;b"), std::logic_error);
  EXPECT_THROW(row.param("a=b", "1"), std::logic_error);
  EXPECT_THROW(row.param("a;b", "1"), std::logic_error);
  row.param("expr", "m=4096").param("size", "1");  // '=' in a value reads back: case_key_params splits at the first
  EXPECT_EQ(case_key_params(row.case_key()), row.params);
}

TEST(MetricText, ShortestRoundTripAndEmptyWhenNotFinite) {
  EXPECT_EQ(metric_text(12.5), "12.5");
  EXPECT_EQ(metric_text(100), "100");
  EXPECT_EQ(metric_text(std::nan("")), "");
  EXPECT_EQ(metric_text(std::numeric_limits<double>::infinity()), "");
  EXPECT_EQ(metric_text(-std::numeric_limits<double>::infinity()), "");
  EXPECT_EQ(std::stod(metric_text(0.1 + 0.2)), 0.1 + 0.2);
}

}  // namespace
}  // namespace redline
