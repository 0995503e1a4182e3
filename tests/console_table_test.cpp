// The console table: exact layout for small inputs, column alignment as a
// property for a report, and numbers for humans.
#include "harness/report/console_table.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "harness/report/report.hpp"
#include "tests/support.hpp"

namespace redline {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(FormatTable, ExactLayout) {
  const std::string out = format_table({{"name", "value"}, {"a", "1.5"}, {"long_name", "12345"}}, {false, true});
  EXPECT_EQ(out,
            "name       value\n"
            "----------------\n"
            "a            1.5\n"
            "long_name  12345\n");
}

TEST(FormatTable, TrailingSpacesAreTrimmed) {
  const std::string out = format_table({{"x", "note"}, {"1", "a"}, {"22", ""}}, {true, false});
  EXPECT_EQ(out,
            " x  note\n"
            "--------\n"
            " 1  a\n"
            "22\n");
}

TEST(FormatTable, EmptyInput) { EXPECT_EQ(format_table({}, {}), ""); }

Report sample_report() {
  Report report;
  report.tool = "batch_sweep";
  Row a;
  a.param("batch_size", "1").metric("samples_per_s", 1234.5678).metric("step_time_ms", 10);
  Row b;
  b.param("batch_size", "128").metric("samples_per_s", 98765.4).metric("step_time_ms", std::nan(""));
  b.status = RowStatus::oom;
  b.note = "CUDA out of memory";
  Row c;  // no metrics at all
  c.param("batch_size", "2048");
  c.status = RowStatus::skipped;
  c.note = "not run";
  report.rows = {a, b, c};
  report.summary = {{"max_feasible_batch", "64"}, {"recommended_batch", "32 (the saturation batch)"}};
  return report;
}

TEST(ConsoleTable, ExactReportLayout) {
  EXPECT_EQ(to_console_table(sample_report()),
            "batch_size  samples_per_s  step_time_ms  status   note\n"
            "--------------------------------------------------------------------\n"
            "         1           1235            10  ok\n"
            "       128          98765             -  oom      CUDA out of memory\n"
            "      2048              -             -  skipped  not run\n"
            "\n"
            "max_feasible_batch:  64\n"
            "recommended_batch:   32 (the saturation batch)\n");
}

TEST(ConsoleTable, ColumnsLineUpOnEveryLine) {
  Report report = sample_report();
  Row d;
  d.param("batch_size", "65536").metric("samples_per_s", 0.5).metric("step_time_ms", 123456.7);
  d.status = RowStatus::ok;
  report.rows.push_back(d);
  const auto lines = lines_of(to_console_table(report));
  ASSERT_GE(lines.size(), 6u);
  const std::string& header = lines[0];
  EXPECT_EQ(lines[1].find_first_not_of('-'), std::string::npos);
  EXPECT_GE(lines[1].size(), header.size());

  // Right-aligned numeric columns end where their header ends; status and
  // note start where their header starts.
  const std::vector<std::string> right = {"batch_size", "samples_per_s", "step_time_ms"};
  const std::vector<std::string> left = {"status", "note"};
  const std::size_t n_rows = report.rows.size();
  for (std::size_t r = 0; r < n_rows; ++r) {
    const std::string& line = lines[2 + r];
    for (const auto& col : right) {
      const std::size_t end = header.find(col) + col.size();
      ASSERT_LE(end, line.size()) << line;
      EXPECT_NE(line[end - 1], ' ') << "column " << col << " in: " << line;
      if (end < line.size()) EXPECT_EQ(line[end], ' ') << "column " << col << " in: " << line;
    }
    for (const auto& col : left) {
      const std::size_t start = header.find(col);
      if (start >= line.size()) continue;  // an empty note at the end is trimmed
      EXPECT_NE(line[start], ' ') << "column " << col << " in: " << line;
      EXPECT_EQ(line[start - 1], ' ') << "column " << col << " in: " << line;
    }
  }
  // Rows then a blank line then the summary, each "name:" padded to one column.
  EXPECT_EQ(lines[2 + n_rows], "");
  const std::string& s1 = lines[3 + n_rows];
  const std::string& s2 = lines[4 + n_rows];
  EXPECT_EQ(s1.rfind("max_feasible_batch:", 0), 0u) << s1;
  EXPECT_EQ(s2.rfind("recommended_batch:", 0), 0u) << s2;
  EXPECT_EQ(s1.find("64"), s2.find("32 (the saturation batch)"));
}

TEST(ConsoleTable, NoSummaryMeansNoBlankLine) {
  Report report = sample_report();
  report.summary.clear();
  const std::string out = to_console_table(report);
  EXPECT_NOT_CONTAINS(out, "\n\n");
  EXPECT_EQ(lines_of(out).size(), 5u);
}

TEST(ConsoleTable, LongNotesAreShortenedOnTheConsole) {
  Report report;
  Row r;
  r.param("n", "1");
  r.status = RowStatus::error;
  r.note = std::string(100, 'x');
  report.rows = {r};
  const auto lines = lines_of(to_console_table(report));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_CONTAINS(lines[2], std::string(57, 'x') + "...");
  EXPECT_NOT_CONTAINS(lines[2], std::string(58, 'x'));
}

TEST(HumanNumber, FourSignificantDigits) {
  EXPECT_EQ(human_number(98765.4), "98765");
  EXPECT_EQ(human_number(1234.5678), "1235");
  EXPECT_EQ(human_number(123.456), "123.5");
  EXPECT_EQ(human_number(42), "42");  // whole numbers print as counts
  EXPECT_EQ(human_number(42.5), "42.50");
  EXPECT_EQ(human_number(3.14159), "3.142");
  EXPECT_EQ(human_number(-2.5), "-2.500");
  EXPECT_EQ(human_number(0), "0");
}

TEST(HumanNumber, FractionsKeepFourSignificantDigits) {
  EXPECT_EQ(human_number(0.5), "0.5000");
  EXPECT_EQ(human_number(0.1234567), "0.1235");
  EXPECT_EQ(human_number(0.01234567), "0.01235");
  EXPECT_EQ(human_number(0.001234567), "0.001235");
  EXPECT_EQ(human_number(-0.25), "-0.2500");
}

TEST(HumanNumber, ExponentForTinyAndHugeAndDashForNaN) {
  EXPECT_EQ(human_number(1e15), "1.000e+15");
  EXPECT_EQ(human_number(2.5e18), "2.500e+18");
  EXPECT_EQ(human_number(0.0001234), "1.234e-04");
  EXPECT_EQ(human_number(std::numeric_limits<double>::quiet_NaN()), "-");
}

}  // namespace
}  // namespace redline
