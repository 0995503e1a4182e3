// The --benchmark_* flags a redline tool takes (split_benchmark_args) and
// Google Benchmark's own reports of a run (GoogleBenchmarkReports), on real
// argv arrays, real Google Benchmark reporters and real files.
#include "harness/report/gbench_args.hpp"

#include <benchmark/benchmark.h>
#include <gtest/gtest.h>

#include <fstream>
#include <list>
#include <sstream>
#include <string>
#include <vector>

#include "harness/core/usage_error.hpp"
#include "harness/report/gbench_output.hpp"
#include "harness/report/gbench_rows.hpp"
#include "support.hpp"

using namespace redline;

namespace {

// split_benchmark_args over "tool" and `args`. BenchmarkArgs points into
// argv, as into main()'s, so each argv lives as long as the test program.
BenchmarkArgs split(std::vector<std::string> args) {
  static std::list<std::vector<std::string>> argvs;
  std::vector<std::string>& strings = argvs.emplace_back(std::move(args));
  strings.insert(strings.begin(), "tool");
  static std::list<std::vector<char*>> pointers;
  std::vector<char*>& argv = pointers.emplace_back();
  for (auto& s : strings) argv.push_back(s.data());
  return split_benchmark_args(static_cast<int>(argv.size()), argv.data(), "some_bench");
}

std::vector<std::string> strings(const std::vector<char*>& args) { return {args.begin(), args.end()}; }

// The UsageError split_benchmark_args throws for `arg`, or a failure.
UsageError refusal(const std::string& arg) {
  try {
    split({"sweep", arg});
  } catch (const UsageError& e) {
    return e;
  }
  ADD_FAILURE() << arg << " was accepted";
  return UsageError("accepted");
}

TEST(BenchmarkArgs, OwnFlagsStayOursAndTheNeutralFlagsComeFirst) {
  const BenchmarkArgs args = split({"sweep", "--m", "4096", "--benchmark_filter=gemm/.*", "--csv", "x.csv"});
  EXPECT_EQ(strings(args.ours), (std::vector<std::string>{"tool", "sweep", "--m", "4096", "--csv", "x.csv"}));
  std::vector<std::string> google = {"tool"};
  for (const char* neutral : neutral_google_benchmark_flags()) google.push_back(neutral);
  google.push_back("--benchmark_filter=gemm/.*");  // after them, so it is the one that counts
  EXPECT_EQ(strings(args.google), google);
  EXPECT_CONTAINS(google[1], "--benchmark_out=");
  EXPECT_EQ(args.repetitions, 1);
  EXPECT_EQ(args.format, "");
}

TEST(BenchmarkArgs, ValuesAreRead) {
  const BenchmarkArgs args =
      split({"--benchmark_format=json", "--benchmark_out=/tmp/redline_gbench_args_out.json",
             "--benchmark_out_format=console", "--benchmark_repetitions=3", "--benchmark_counters_tabular=yes",
             "--benchmark_color=false"});
  EXPECT_EQ(args.format, "json");
  EXPECT_EQ(args.out, "/tmp/redline_gbench_args_out.json");
  EXPECT_EQ(args.out_format, "console");
  EXPECT_EQ(args.repetitions, 3);
  EXPECT_TRUE(args.tabular);
  EXPECT_EQ(args.color, "false");
  EXPECT_EQ(args.google.size(), 1 + neutral_google_benchmark_flags().size()) << "only the filter goes on";
}

TEST(BenchmarkArgs, BadValuesNameTheFlagAndTheValue) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--benchmark_format=xml", "--benchmark_format 'xml'"},
      {"--benchmark_out_format=csv", "--benchmark_out_format 'csv'"},
      {"--benchmark_repetitions=0", "--benchmark_repetitions '0'"},
      {"--benchmark_repetitions=1001", "--benchmark_repetitions '1001'"},
      {"--benchmark_counters_tabular=maybe", "--benchmark_counters_tabular 'maybe'"},
      {"--benchmark_color=blue", "--benchmark_color 'blue'"},
  };
  for (const auto& [arg, names] : bad) {
    const UsageError e = refusal(arg);
    EXPECT_CONTAINS(e.what(), names);
    EXPECT_EQ(e.flag() + "=" + e.value(), arg);
  }
}

TEST(BenchmarkArgs, AnInvalidFilterIsRefusedNotRunAsNothing) {
  for (const char* filter : {"(", "a{,2}", "[z-a]"}) {
    const UsageError e = refusal(std::string("--benchmark_filter=") + filter);
    EXPECT_EQ(e.flag(), "--benchmark_filter");
    EXPECT_EQ(e.value(), filter);
    EXPECT_CONTAINS(e.what(), "not a valid extended regular expression");
  }
}

TEST(BenchmarkArgs, FlagsTheToolsMeasurementDecidesAreRefused) {
  for (const char* arg : {"--benchmark_min_time=2", "--benchmark_min_warmup_time=1", "--benchmark_list_tests=true",
                          "--benchmark_report_aggregates_only=true", "--benchmark_no_such_flag=1"}) {
    const UsageError e = refusal(arg);
    EXPECT_CONTAINS(e.what(), "not taken by some_bench");
    EXPECT_EQ(e.flag() + "=" + e.value(), arg);
  }
  EXPECT_CONTAINS(refusal("--benchmark_filter").what(), "give it as --benchmark_filter=VALUE");
}

TEST(BenchmarkArgs, AnOutFileThatCannotBeWrittenIsRefusedFirst) {
  const redline::testing::TempDir dir;
  const UsageError e = refusal("--benchmark_out=" + (dir / "a_dir").string() + "/");
  EXPECT_EQ(e.flag(), "--benchmark_out");
}

TEST(BenchmarkArgs, GoogleBenchmarkTakesWhatIsLeft) {
  BenchmarkArgs args = split({"--benchmark_filter=^only$"});
  initialize_google_benchmark(args);
  EXPECT_EQ(benchmark::GetBenchmarkFilter(), "^only$");
  benchmark::SetBenchmarkFilter("");
}

// --- Google Benchmark's own reports ------------------------------------------

// One finished batch of one case through a collector forwarding to `reports`.
void run_one_case(const GoogleBenchmarkReports& reports) {
  RowCollector collector;
  for (auto* reporter : reports.reporters()) collector.add_forward(reporter);
  benchmark::RegisterBenchmark("fam/a:1", [](benchmark::State& state) {
    for (auto _ : state) state.SetIterationTime(0.001);
  })->UseManualTime()->Iterations(1);
  benchmark::RunSpecifiedBenchmarks(&collector);
  benchmark::ClearRegisteredBenchmarks();
  collector.finish();
}

class GoogleReports : public redline::testing::TempDirTest {};

TEST_F(GoogleReports, NoFormatNoOutMeansNoReporters) {
  std::ostringstream display;
  const GoogleBenchmarkReports reports(split({}), display);
  EXPECT_FALSE(reports.owns_display());
  EXPECT_TRUE(reports.reporters().empty());
  EXPECT_NO_THROW(reports.write_out_file());
}

TEST_F(GoogleReports, JsonFormatOwnsTheDisplay) {
  std::ostringstream display;
  const GoogleBenchmarkReports reports(split({"--benchmark_format=json"}), display);
  EXPECT_TRUE(reports.owns_display());
  run_one_case(reports);
  EXPECT_CONTAINS(display.str(), "\"benchmarks\"");
  EXPECT_CONTAINS(display.str(), "\"name\": \"fam/a:1/iterations:1/manual_time\"");
}

TEST_F(GoogleReports, TheOutFileIsWrittenOnlyAtTheEndAndWhole) {
  const auto out = dir_ / "gbench.json";
  std::ostringstream display;
  const GoogleBenchmarkReports reports(split({"--benchmark_out=" + out.string()}), display);
  EXPECT_FALSE(reports.owns_display()) << "--benchmark_out alone leaves stdout to the tool";
  ASSERT_EQ(reports.reporters().size(), 1u);
  run_one_case(reports);
  EXPECT_FALSE(std::filesystem::exists(out)) << "nothing on disk before write_out_file";
  reports.write_out_file();
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_CONTAINS(text, "\"benchmarks\"");
  EXPECT_EQ(text[text.find_last_not_of(" \n")], '}') << "a whole document";
  EXPECT_TRUE(display.str().empty());
}

TEST_F(GoogleReports, ConsoleOutFormatWritesTheConsoleReportWithoutColour) {
  const auto out = dir_ / "gbench.txt";
  std::ostringstream display;
  const GoogleBenchmarkReports reports(
      split({"--benchmark_out=" + out.string(), "--benchmark_out_format=console", "--benchmark_color=true"}),
      display);
  run_one_case(reports);
  reports.write_out_file();
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_CONTAINS(text, "fam/a:1/iterations:1/manual_time");
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "no colour codes in a file";
}

}  // namespace
