// The tools' declarations of their columns: consistent with each other, made
// into the schema document the binaries read back, listed in --help, and the
// check that refuses a written column declared nowhere.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "bench/tool_columns.hpp"
#include "harness/report/output.hpp"
#include "harness/report/schema.hpp"
#include "harness/report/schema_document.hpp"
#include "tests/support.hpp"

using namespace redline;

namespace {

ToolDeclaration small_tool(std::string name) {
  ToolDeclaration tool{name, "a tool", {}};
  tool.columns.parameters = {{"size", "bytes"}};
  tool.columns.metrics = {{.name = "rate_GBps", .unit = "GB/s", .better = Better::higher, .tracked = true,
                           .meaning = "bytes / time", .where = "sweep, check"}};
  tool.columns.chart = {{.tool = name, .x = {"size"}, .metric = {"rate_GBps"}}};
  tool.columns.headlines = {{.tool = name, .figure = "best rate", .metric = {"rate_GBps"}, .from = HeadlineFrom::best}};
  return tool;
}

const char* kDocument = "# schema\n\n## Metrics\n\n@METRICS@\n\n## Parameters\n\n@PARAMETERS@\n\n## Charts\n\n"
                        "@CHARTS@\n\n## Headlines\n\n@HEADLINES@\n";

TEST(Declarations, TheToolsDeclarationsAgree) {
  const auto problems = declaration_problems(tool_declarations());
  EXPECT_TRUE(problems.empty()) << problems.front();
}

TEST(Declarations, ContradictionsAreFound) {
  ToolDeclaration a = small_tool("a"), b = small_tool("b");
  b.columns.metrics[0].better = Better::lower;
  EXPECT_CONTAINS(declaration_problems({a, b}).at(0), "metric rate_GBps is GB/s, lower");
  a.columns.metrics.push_back(a.columns.metrics[0]);
  EXPECT_CONTAINS(declaration_problems({a}).at(0), "a declares metric rate_GBps twice");
  ToolDeclaration c = small_tool("c");
  c.columns.chart[0].metric = {"other_GBps"};
  EXPECT_CONTAINS(declaration_problems({c}).at(0), "c's chart names undeclared metric other_GBps");
  EXPECT_CONTAINS(declaration_problems({small_tool("d"), small_tool("d")}).at(0), "tool d is declared twice");
}

// What the document says, the schema reads back: the tools of a metric
// (commas inside a `where` split nothing), each tool's parameters, its chart.
TEST(Declarations, TheDocumentReadsBackAsTheSchema) {
  ToolDeclaration a = small_tool("a"), b = small_tool("b");
  b.columns.metrics[0].meaning = "b's own words";
  const Schema schema = Schema::parse(schema_document(kDocument, {a, b}), "generated");
  ASSERT_EQ(schema.metrics().size(), 1u);
  EXPECT_EQ(schema.metrics()[0].tools, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(schema.declares("a", "size"));
  EXPECT_TRUE(schema.declares("b", "rate_GBps"));
  EXPECT_FALSE(schema.declares("a", "time_us"));
  ASSERT_TRUE(schema.chart_hints("b"));
  EXPECT_EQ(schema.chart_hints("b")->x, std::vector<std::string>{"size"});
  EXPECT_TRUE(schema.chart_hints("b")->saturation);
  a.columns.chart[0].saturation = false;
  EXPECT_FALSE(Schema::parse(schema_document(kDocument, {a}), "generated").chart_hints("a")->saturation);
  ASSERT_EQ(schema.headlines("a").size(), 1u);
  EXPECT_EQ(schema.headlines("a")[0].from, HeadlineFrom::best);
  EXPECT_THROW(schema_document("# no placeholders\n", {a}), std::invalid_argument);
}

TEST(Declarations, HelpListsTheToolsColumns) {
  const std::string help = columns_help(tool_declaration("allreduce_bench"));
  EXPECT_CONTAINS(help, "busbw_GBps (GB/s, higher, tracked)");
  EXPECT_CONTAINS(help, "collective: ");
  EXPECT_THROW(tool_declaration("no_such_tool"), std::out_of_range);
}

class UndeclaredColumns : public redline::testing::TempDirTest {};

Report report_with(const std::string& tool, const std::string& metric) {
  Report report;
  report.tool = tool;
  Row row;
  row.param("collective", "all_reduce").metric("busbw_GBps", 1).metric(metric, 2);
  report.rows.push_back(row);
  return report;
}

TEST_F(UndeclaredColumns, AreNamed) {
  const Schema& schema = Schema::compiled_in();
  EXPECT_EQ(undeclared_columns(report_with("allreduce_bench", "made_up_us"), schema),
            std::vector<std::string>{"made_up_us"});
  EXPECT_TRUE(undeclared_columns(report_with("allreduce_bench", "time_us"), schema).empty());
  EXPECT_TRUE(undeclared_columns(report_with("a_test_tool", "made_up_us"), schema).empty());  // not one of ours
}

// Under the tests a tool's undeclared column fails the run before anything
// is written; in a user's run the rows are written and the column warned about.
TEST_F(UndeclaredColumns, FailUnderTheTestsAndWarnOtherwise) {
  OutputOptions options{.csv_path = (dir_ / "r.csv").string(), .json_path = "", .quiet = true};
  const Report report = report_with("allreduce_bench", "made_up_us");
  ::setenv("REDLINE_STRICT_SCHEMA", "1", 1);
  EXPECT_THROW(write_reports(report, options), std::logic_error);
  EXPECT_FALSE(std::filesystem::exists(options.csv_path));
  ::setenv("REDLINE_STRICT_SCHEMA", "0", 1);
  ::testing::internal::CaptureStderr();
  write_reports(report, options);
  EXPECT_CONTAINS(::testing::internal::GetCapturedStderr(), "declaration lacks: made_up_us");
  EXPECT_TRUE(std::filesystem::exists(options.csv_path));
  ::setenv("REDLINE_STRICT_SCHEMA", "1", 1);  // as ctest runs every test
}

}  // namespace
