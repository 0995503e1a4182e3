// The schema: results/SCHEMA.md's metric and charts tables, parsed, and the
// copy compiled into the binaries.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "harness/report/schema.hpp"
#include "tests/support.hpp"

namespace fs = std::filesystem;
using namespace redline;

namespace {

TEST(Schema, CompiledInReadsMetricDirections) {
  const Schema& schema = Schema::compiled_in();
  const auto busbw = schema.find("busbw_GBps");
  ASSERT_TRUE(busbw);
  EXPECT_EQ(busbw->better, Better::higher);
  EXPECT_TRUE(busbw->tracked);
  EXPECT_EQ(busbw->unit, "GB/s");

  const auto step = schema.find("step_time_ms");
  ASSERT_TRUE(step);
  EXPECT_EQ(step->better, Better::lower);
  EXPECT_FALSE(step->tracked);

  const auto samples = schema.find("samples_per_s");
  ASSERT_TRUE(samples);
  EXPECT_EQ(samples->name, "samples_per_s");  // the exact row wins over the pattern
  EXPECT_TRUE(samples->tracked);

  const auto images = schema.find("images_per_s");
  ASSERT_TRUE(images);
  EXPECT_EQ(images->name, "*_per_s");
  EXPECT_EQ(images->better, Better::higher);
  EXPECT_TRUE(images->tracked);

  const auto mem = schema.find("peak_mem_GiB");
  ASSERT_TRUE(mem);
  EXPECT_EQ(mem->better, Better::lower);

  EXPECT_FALSE(schema.find("_per_s"));  // the pattern needs a prefix
  EXPECT_FALSE(schema.find("count"));
  EXPECT_FALSE(schema.find("batch_size"));
}

// The build writes the compiled-in text from the tools' declarations; the
// committed results/SCHEMA.md must be that text (scripts/generate-schema
// rewrites it), so what a reader sees is what the binaries judge by.
TEST(Schema, CompiledInIsTheSourceTreesFile) {
  const Schema source = Schema::load(fs::path(SOURCE_DIR) / "results" / "SCHEMA.md");
  const Schema& built = Schema::compiled_in();
  ASSERT_EQ(built.metrics().size(), source.metrics().size());
  for (std::size_t i = 0; i < built.metrics().size(); ++i) {
    const MetricSpec &a = built.metrics()[i], &b = source.metrics()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.unit, b.unit) << a.name;
    EXPECT_EQ(a.better, b.better) << a.name;
    EXPECT_EQ(a.tracked, b.tracked) << a.name;
  }
  for (const char* tool : {"batch_sweep", "allreduce_bench", "gemm_bench"}) {
    ASSERT_TRUE(built.chart_hints(tool)) << tool;
    ASSERT_TRUE(source.chart_hints(tool)) << tool;
    EXPECT_EQ(built.chart_hints(tool)->metric, source.chart_hints(tool)->metric) << tool;
  }
  // And byte for byte, charts table included.
  std::ifstream in(fs::path(SOURCE_DIR) / "results" / "SCHEMA.md", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(std::string(compiled_schema_markdown()) == text)
      << "results/SCHEMA.md is not what the declarations make: run scripts/generate-schema";
}

// Which tool declares which column: what the check on written rows reads.
TEST(Schema, CompiledInKnowsEachToolsColumns) {
  const Schema& schema = Schema::compiled_in();
  EXPECT_TRUE(schema.knows_tool("allreduce_bench"));
  EXPECT_TRUE(schema.declares("allreduce_bench", "busbw_GBps"));
  EXPECT_TRUE(schema.declares("allreduce_bench", "collective"));  // a parameter
  EXPECT_FALSE(schema.declares("allreduce_bench", "tflops"));     // another tool's metric
  EXPECT_TRUE(schema.declares("gemm_bench", "sm_clock_mhz_min"));  // the case runner's, on the tool's rows
  EXPECT_TRUE(schema.declares("batch_sweep", "images_per_s"));    // through the *_per_s pattern
  EXPECT_TRUE(schema.declares("train_step_bench", "batch_size"));  // the batch engine's, on sweep's trials
  EXPECT_FALSE(schema.knows_tool("no_such_tool"));
  const auto wrong = schema.find("wrong");
  ASSERT_TRUE(wrong);  // one metric, each tool's own meaning on a row of its own
  EXPECT_EQ(wrong->tools, (std::vector<std::string>{"allreduce_bench", "gemm_bench", "attention_bench"}));
}

TEST(Schema, CompiledInChartHints) {
  const Schema& schema = Schema::compiled_in();
  const ChartHints* batch = schema.chart_hints("batch_sweep");
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->x, std::vector<std::string>{"batch_size"});
  EXPECT_EQ(batch->x_scale, AxisScale::automatic);
  EXPECT_EQ(batch->metric, (std::vector<std::string>{"samples_per_s", "*_per_s"}));
  EXPECT_EQ(batch->prediction, "");
  EXPECT_EQ(batch->series, "");

  const ChartHints* allreduce = schema.chart_hints("allreduce_bench");
  ASSERT_TRUE(allreduce);
  EXPECT_EQ(allreduce->x, std::vector<std::string>{"bytes"});
  EXPECT_EQ(allreduce->x_scale, AxisScale::log2);
  EXPECT_EQ(allreduce->metric, std::vector<std::string>{"busbw_GBps"});
  EXPECT_EQ(allreduce->series, "inplace");
  using Labels = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(allreduce->series_labels, (Labels{{"0", "out-of-place"}, {"1", "in-place"}}));
  EXPECT_EQ(allreduce->not_grouping, (std::vector<std::string>{"count", "group_hosts"}));

  const ChartHints* gemm = schema.chart_hints("gemm_bench");
  ASSERT_TRUE(gemm);
  EXPECT_EQ(gemm->x, (std::vector<std::string>{"m", "n", "k"}));
  EXPECT_EQ(gemm->x_scale, AxisScale::linear);
  EXPECT_EQ(gemm->prediction, "predicted_tflops");

  const ChartHints* checkpoint = schema.chart_hints("checkpoint_bench");
  ASSERT_TRUE(checkpoint);
  EXPECT_EQ(checkpoint->x, std::vector<std::string>{"threads"});
  EXPECT_EQ(checkpoint->metric, std::vector<std::string>{"GBps"});
  EXPECT_EQ(checkpoint->series, "chunk");
  EXPECT_EQ(schema.chart_hints("no_such_tool"), nullptr);
}

TEST(Schema, MetricPatternsMatchSuffixes) {
  EXPECT_TRUE(metric_matches("tflops", "tflops"));
  EXPECT_FALSE(metric_matches("tflops", "predicted_tflops"));
  EXPECT_TRUE(metric_matches("*_per_s", "tokens_per_s"));
  EXPECT_FALSE(metric_matches("*_per_s", "_per_s"));
  EXPECT_FALSE(metric_matches("*_per_s", "tokens_per_step"));
}

const char* kGoodTable =
    "# schema\n"
    "\n"
    "## Metrics\n"
    "\n"
    "| metric | unit | better | tracked | tools | meaning |\n"
    "|---|---|---|---|---|---|\n"
    "| `a_ms` | ms | lower | yes | t | a \\| b |\n";

TEST(Schema, ParsesAMinimalTable) {
  const Schema schema = Schema::parse(kGoodTable, "good.md");
  ASSERT_EQ(schema.metrics().size(), 1u);
  EXPECT_EQ(schema.metrics()[0].name, "a_ms");
  EXPECT_EQ(schema.metrics()[0].better, Better::lower);
  EXPECT_EQ(schema.chart_hints("t"), nullptr);  // no charts table: every tool is charted generically
}

void expect_schema_error(const std::string& markdown, const std::string& where, const std::string& words) {
  try {
    Schema::parse(markdown, "bad.md");
    ADD_FAILURE() << "no error for:\n" << markdown;
  } catch (const std::runtime_error& e) {
    EXPECT_CONTAINS(e.what(), where);
    EXPECT_CONTAINS(e.what(), words);
  }
}

TEST(Schema, MalformedTablesNameFileAndLine) {
  const std::string good = kGoodTable;
  expect_schema_error(good + "| `b_ms` | ms | sideways | yes | t | m |\n", "bad.md:8:", "sideways");
  expect_schema_error(good + "| `b_ms` | ms | lower | maybe | t | m |\n", "bad.md:8:", "maybe");
  expect_schema_error(good + "| `b_ms` | ms | lower | yes |\n", "bad.md:8:", "expected 6 cells");
  expect_schema_error(good + "| `a_ms` | ms | higher | yes | u | m |\n", "bad.md:8:", "another unit, direction");
  expect_schema_error(good + "| `b ms` | ms | lower | yes | t | m |\n", "bad.md:8:", "b ms");
  expect_schema_error("# schema\n\nno metrics here\n", "bad.md:1:", "## Metrics");
  expect_schema_error("## Metrics\n\n| metric | unit | tracked |\n|---|---|---|\n", "bad.md:3:", "better");
}

// kGoodTable, then a charts table with one row per entry of `rows`.
std::string with_charts(const std::vector<std::string>& rows) {
  std::string text = std::string(kGoodTable) +
                     "\n## Charts\n\n"
                     "| tool | x | x scale | metric | prediction | series | series labels | not grouping |\n"
                     "|---|---|---|---|---|---|---|---|\n";
  for (const auto& row : rows) text += row + "\n";
  return text;
}

TEST(Schema, ParsesChartHints) {
  const Schema schema = Schema::parse(
      with_charts({"| `sweeper` | `m`, `n` | linear | `a_ms`, `*_per_s` | `model_ms` | `mode` | 0=off, 1=on | `c` |",
                   "| plain | size | auto | a_ms | - | | - | - |"}),
      "good.md");
  const ChartHints* hints = schema.chart_hints("sweeper");
  ASSERT_TRUE(hints);
  EXPECT_EQ(hints->x, (std::vector<std::string>{"m", "n"}));
  EXPECT_EQ(hints->x_scale, AxisScale::linear);
  EXPECT_EQ(hints->metric, (std::vector<std::string>{"a_ms", "*_per_s"}));
  EXPECT_EQ(hints->prediction, "model_ms");
  EXPECT_EQ(hints->series, "mode");
  using Labels = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(hints->series_labels, (Labels{{"0", "off"}, {"1", "on"}}));
  EXPECT_EQ(hints->not_grouping, std::vector<std::string>{"c"});

  const ChartHints* plain = schema.chart_hints("plain");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->x_scale, AxisScale::automatic);
  EXPECT_EQ(plain->prediction, "");  // "-" and an empty cell both mean none
  EXPECT_EQ(plain->series, "");
  EXPECT_TRUE(plain->series_labels.empty());
  EXPECT_TRUE(plain->not_grouping.empty());
}

TEST(Schema, MalformedChartRowsNameFileAndLine) {
  // The charts table's first row is line 13.
  expect_schema_error(with_charts({"| t | n | sideways | a_ms | - | - | - | - |"}), "bad.md:13:", "sideways");
  expect_schema_error(with_charts({"| t | - | auto | a_ms | - | - | - | - |"}), "bad.md:13:", "no x parameter");
  expect_schema_error(with_charts({"| t | n | auto | - | - | - | - | - |"}), "bad.md:13:", "no metric");
  expect_schema_error(with_charts({"| t | n | auto | a_ms | - | - | 0=off | - |"}), "bad.md:13:", "without a series");
  expect_schema_error(with_charts({"| t | n | auto | a_ms | - | s | off | - |"}), "bad.md:13:", "VALUE=LABEL");
  expect_schema_error(with_charts({"| t | n | auto | a_ms | p, q | - | - | - |"}), "bad.md:13:", "expected one");
  expect_schema_error(with_charts({"| t | n m | auto | a_ms | - | - | - | - |"}), "bad.md:13:", "n m");
  expect_schema_error(with_charts({"| t | n | auto | a_ms | - | - | - | - |", "| t | m | auto | a_ms | - | - | - | - |"}),
                      "bad.md:14:", "two charts rows");
  expect_schema_error(std::string(kGoodTable) + "\n## Charts\n\n| tool | x |\n|---|---|\n| t | n |\n", "bad.md:11:",
                      "x scale");
}

}  // namespace
