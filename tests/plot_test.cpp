// scripts/plot: PNGs of the charts a tool wrote into its JSON report
// (context.redline.charts), drawn as given: titles, series and markers come
// from the file, nothing is recomputed. Exit 1 when there is nothing to plot,
// 2 for bad input, 77 (skipped here) without matplotlib.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness/core/child_process.hpp"
#include "harness/report/csv_reader.hpp"
#include "tests/support.hpp"

namespace fs = std::filesystem;
using namespace redline;

namespace {

class PlotScript : public redline::testing::TempDirTest {
 protected:
  ChildResult plot(const std::vector<std::string>& args) {
    ChildSpec spec;
    spec.argv = {std::string(SOURCE_DIR) + "/scripts/plot"};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.timeout_seconds = 120;
    return run_child(spec);
  }

  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }

  // The PNG files plot printed, each checked to be a real PNG.
  std::set<std::string> printed_pngs(const std::string& output) {
    std::set<std::string> names;
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
      if (!line.ends_with(".png")) continue;
      std::ifstream in(line, std::ios::binary);
      std::string magic(8, '\0');
      in.read(magic.data(), 8);
      EXPECT_EQ(magic, "\x89PNG\r\n\x1a\n") << line;
      EXPECT_GT(fs::file_size(line), 1000u) << line;
      names.insert(fs::path(line).filename().string());
    }
    return names;
  }
};

// A report whose context.redline holds `charts_json` (a JSON value).
std::string report_with_charts(const std::string& charts_json) {
  return R"({"context": {"redline": {"tool": "planted", "summary": {}, "charts": )" + charts_json +
         R"(}}, "benchmarks": []})";
}

// Two charts no rule would produce from any rows: plot must draw them as they are.
const char* kPlantedCharts = R"json([
  {"title": "planted: a=1", "x": {"parameter": "bytes", "scale": "log2", "label": "bytes (log2 scale)"},
   "y": {"metric": "m_per_s", "unit": "1/s", "label": "m_per_s (1/s)"},
   "series": [{"name": "out-of-place", "prediction": false, "points": [[1024, 5], [4096, 1], [65536, 9]]},
              {"name": "model prediction", "prediction": true, "points": [[1024, 6], [65536, 8]]}],
   "markers": [{"x": 4096, "y": 1, "label": "planted marker"}], "findings": ["planted"]},
  {"title": "planted: a=2", "x": {"parameter": "n", "scale": "linear", "label": "n"},
   "y": {"metric": "m_per_s", "unit": "1/s", "label": "m_per_s (1/s)"},
   "series": [{"name": "m_per_s", "prediction": false, "points": [[1, 3], [2, 2]]}],
   "markers": [], "findings": []}
])json";

TEST_F(PlotScript, DrawsTheChartsTheJsonHolds) {
  const fs::path report = write("planted.json", report_with_charts(kPlantedCharts));
  const ChildResult r = plot({report.string(), "-o", (dir_ / "png").string()});
  if (r.exit_code == 77) GTEST_SKIP() << "matplotlib is not installed (scripts/setup installs python3-matplotlib)";
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(printed_pngs(r.output), (std::set<std::string>{"planted-a=1-m_per_s.png", "planted-a=2-m_per_s.png"}));
}

// The real batch_sweep's JSON, named directly or through the CSV beside it.
TEST_F(PlotScript, DrawsARealBatchSweep) {
  ChildSpec sweep;
  sweep.argv = {BATCH_SWEEP_BIN, "--quiet", "--max", "64", "--metric-regex", "throughput: ([0-9.]+) samples/s",
                "--csv", (dir_ / "sweep.csv").string(), "--json", (dir_ / "sweep.json").string(), "--",
                FAKE_TRAIN_BIN, "--batch-size", "{bs}", "--step-ms", "1"};
  sweep.timeout_seconds = 300;
  ASSERT_TRUE(run_child(sweep).succeeded());
  for (const char* file : {"sweep.json", "sweep.csv"}) {
    const ChildResult r = plot({(dir_ / file).string(), "-o", (dir_ / "png").string()});
    if (r.exit_code == 77) GTEST_SKIP() << "matplotlib is not installed (scripts/setup installs python3-matplotlib)";
    ASSERT_EQ(r.exit_code, 0) << file << ": " << r.output;
    // The chart's name carries what the rows share: the program and its configuration.
    const std::string config = read_csv(dir_ / "sweep.csv").value(0, "config");
    EXPECT_EQ(printed_pngs(r.output),
              std::set<std::string>{"batch_sweep-program=fake_train-config=" + config + "-samples_per_s.png"})
        << file;
  }
}

// Titles and names are drawn as text: a parameter value with a $ is not
// matplotlib math. The PNGs are readable by others, as the umask allows.
TEST_F(PlotScript, DollarSignsAreTextAndPngsAreNotPrivate) {
  std::string charts = kPlantedCharts;
  charts.replace(charts.find("planted: a=1"), 12, "planted: a=$5 $x$");
  const mode_t umask_before = ::umask(022);  // the child's: others may read
  const ChildResult r = plot({write("dollars.json", report_with_charts(charts)).string(), "-o", (dir_ / "png").string()});
  ::umask(umask_before);
  if (r.exit_code == 77) GTEST_SKIP() << "matplotlib is not installed (scripts/setup installs python3-matplotlib)";
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const std::string& name : printed_pngs(r.output)) {
    const auto perms = fs::status(dir_ / "png" / name).permissions();
    EXPECT_NE(perms & fs::perms::others_read, fs::perms::none) << name;
  }
}

TEST_F(PlotScript, NothingToPlotExitsOne) {
  const fs::path no_charts = write("old.json", R"({"context": {"redline": {"tool": "t", "summary": {}}}})");
  ChildResult r = plot({no_charts.string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "no charts");

  r = plot({write("empty.json", report_with_charts("[]")).string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "nothing to plot");
}

TEST_F(PlotScript, BadInputExitsTwoNamingIt) {
  ChildResult r = plot({(dir_ / "missing.json").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_CONTAINS(r.output, "missing.json: no such file");

  // A CSV stands for the JSON beside it, which is missing here.
  write("alone.csv", "run_id,tool\r\n");
  r = plot({(dir_ / "alone.csv").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_CONTAINS(r.output, "alone.json: no such file");

  r = plot({write("broken.json", "{\"context\": ").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_CONTAINS(r.output, "broken.json: cannot read");

  for (const char* foreign : {R"({"context": {}, "benchmarks": []})", R"({"context": []})"}) {
    r = plot({write("foreign.json", foreign).string()});
    EXPECT_EQ(r.exit_code, 2) << foreign << ": " << r.output;
    EXPECT_CONTAINS(r.output, "not a redline JSON report");
  }

  const fs::path ok = write("ok.json", report_with_charts(kPlantedCharts));
  r = plot({ok.string(), "-o", "/proc/no-such-folder"});
  if (r.exit_code != 77) {
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_CONTAINS(r.output, "-o /proc/no-such-folder");
  }

  r = plot({write("malformed.json", report_with_charts(R"([{"title": "t", "series": []}])")).string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_CONTAINS(r.output, "context.redline.charts[0] is malformed");

  r = plot({ok.string(), "--y", "m_per_s"});
  EXPECT_EQ(r.exit_code, 2) << r.output;  // the tool decides the axes now: no --x/--y
  EXPECT_CONTAINS(r.output, "--y");
}

}  // namespace
