// scripts/nightly end to end on real tool runs: a first run becomes the
// reference, an identical run passes, a planted 20% regression fails naming
// the case and the metric, and every run leaves its HTML report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/core/child_process.hpp"
#include "tests/support.hpp"

namespace fs = std::filesystem;

namespace {

class NightlyTest : public redline::testing::TempDirTest {
 protected:

  // A one-entry suite: batch_sweep on the simulated trainer.
  fs::path suite(const std::string& name) {
    const fs::path file = dir_ / name;
    std::ofstream(file) << "sweep " << BATCH_SWEEP_BIN
                        << " --max 16 --metric-regex 'throughput: ([0-9.]+) samples/s' -- " << FAKE_TRAIN_BIN
                        << " --batch-size {bs} --step-ms 1\n";
    return file;
  }

  // scripts/nightly ARGS on this build, no build step, looking for GPU device
  // nodes matching `devices` alone (by default none: no GPU hardware,
  // whatever this machine's lspci lists).
  redline::ChildSpec nightly_spec(const std::vector<std::string>& args, const std::string& devices = "no-such-device") {
    redline::ChildSpec spec;
    spec.argv = {std::string(SOURCE_DIR) + "/scripts/nightly"};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.extra_env = {{"REDLINE_SKIP_SETUP", "1"},
                      {"REDLINE_BUILD_DIR", fs::path(REDLINE_BIN).parent_path().parent_path().string()},
                      {"REDLINE_NVIDIA_DEVICES", (dir_ / devices).string()}};
    spec.timeout_seconds = 300;
    return spec;
  }

  // The node's throughput is scaled in fake_train's environment: a slower
  // machine running the same command (and so the same case keys).
  redline::ChildResult nightly(const fs::path& suite_file, const std::string& scale = "1") {
    redline::ChildSpec spec = nightly_spec({"--suite", suite_file.string(), "--results", (dir_ / "results").string()});
    spec.extra_env.emplace_back("FAKE_TRAIN_THROUGHPUT_SCALE", scale);
    return redline::run_child(spec);
  }

  // The run folder `redline suite` reported ("results: DIR/").
  static fs::path run_of(const redline::ChildResult& r) {
    const auto at = r.output.find("\nresults: ");
    if (at == std::string::npos) return {};
    const auto begin = at + 10, end = r.output.find('\n', begin);
    std::string dir = r.output.substr(begin, end - begin);
    if (!dir.empty() && dir.back() == '/') dir.pop_back();
    return dir;
  }

};

TEST_F(NightlyTest, ReferenceThenSameThenPlantedRegression) {
  const auto first = nightly(suite("base"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_CONTAINS(first.output, "is the first reference");
  EXPECT_TRUE(fs::exists(run_of(first) / "report.html"));

  const auto same = nightly(suite("base"));
  ASSERT_EQ(same.exit_code, 0) << same.output;
  EXPECT_CONTAINS(same.output, "SAME");
  EXPECT_NOT_CONTAINS(same.output, "! SLOWER");
  EXPECT_TRUE(fs::exists(run_of(same) / "report.html"));
  EXPECT_TRUE(fs::exists(run_of(same) / "compare.md"));

  const auto slower = nightly(suite("base"), "0.8");
  EXPECT_EQ(slower.exit_code, 1) << slower.output;
  EXPECT_CONTAINS(slower.output, "! SLOWER");
  EXPECT_CONTAINS(slower.output, "batch_size=8");
  EXPECT_CONTAINS(slower.output, "samples_per_s");
  EXPECT_TRUE(fs::exists(run_of(slower) / "report.html"));

  // The failed night is no baseline: the regression fails again the next night.
  const auto again = nightly(suite("base"), "0.8");
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_CONTAINS(again.output, "! SLOWER");
}

// The committed reference for machines without a GPU still matches the quick
// suite it came from: a change to the case keys or the figures must come with
// a new baseline (redline baseline RUN), or every nightly without a GPU has
// nothing to compare.
TEST_F(NightlyTest, TheCommittedBaselineMatchesTheQuickSuite) {
  std::ifstream quick(fs::path(SOURCE_DIR) / "results" / "suites" / "quick");
  std::string line;
  while (std::getline(quick, line) && line.rfind("batch_sweep_example ", 0) != 0) {
  }
  ASSERT_FALSE(line.empty()) << "results/suites/quick has no batch_sweep_example entry";
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"build/bench/batch_sweep", BATCH_SWEEP_BIN},
                                 {"build/tests/fake_train", FAKE_TRAIN_BIN}})
    line.replace(line.find(from), from.size(), to);
  std::ofstream(dir_ / "quick") << line << "\n";
  const auto r = redline::run_child(nightly_spec({"--suite", (dir_ / "quick").string(), "--results",
                                                 (dir_ / "results").string(), "--baseline",
                                                 std::string(SOURCE_DIR) + "/results/baselines/none"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "SAME");
  EXPECT_NOT_CONTAINS(r.output, "nothing to compare");
}

// A GPU whose driver fails is no machine without a GPU: its entries would all
// skip and the CPU ones pass. A device node stands for the hardware here
// (REDLINE_NVIDIA_DEVICES), and nvidia-smi is absent or fails on this machine.
TEST_F(NightlyTest, AGpuTheDriverCannotUseFailsTheNight) {
  std::ofstream(dir_ / "nvidia0") << "";
  redline::ChildSpec probe;
  probe.argv = {"sh", "-c", "nvidia-smi -L"};
  if (redline::run_child(probe).succeeded()) GTEST_SKIP() << "nvidia-smi works here: no broken driver to stand for";
  const auto broken =
      redline::run_child(nightly_spec({"--suite", suite("base").string(), "--results", (dir_ / "results").string()}, "nvidia*"));
  EXPECT_EQ(broken.exit_code, 1) << broken.output;
  EXPECT_CONTAINS(broken.output, "has an NVIDIA GPU (" + (dir_ / "nvidia0").string() + "), but nvidia-smi cannot use it");
  EXPECT_FALSE(fs::exists(dir_ / "results" / "runs")) << "no suite should have run";
  // Asked for the CPU-only suite, it runs it; --quick with --suite too.
  const auto quick = redline::run_child(nightly_spec({"--quick", "--results", (dir_ / "results").string()}, "nvidia*"));
  EXPECT_EQ(quick.exit_code, 0) << quick.output;
  EXPECT_NOT_CONTAINS(quick.output, "cannot use it");
  const auto quick_suite = redline::run_child(nightly_spec(
      {"--quick", "--suite", suite("base").string(), "--results", (dir_ / "results_of_the_suite").string()}, "nvidia*"));
  EXPECT_EQ(quick_suite.exit_code, 0) << quick_suite.output;
  EXPECT_NOT_CONTAINS(quick_suite.output, "cannot use it");
}

// A night that passes says which entries measured nothing (exit 77).
TEST_F(NightlyTest, SkippedEntriesAreNamed) {
  const fs::path file = suite("with_skip");
  std::ofstream(file, std::ios::app) << "gpu_thing sh -c 'echo no GPU here; exit 77'\n";
  const auto first = nightly(file);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_CONTAINS(first.output, "skipped, so not measured tonight: gpu_thing");
  const auto second = nightly(file);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_CONTAINS(second.output, "skipped, so not measured tonight: gpu_thing");
  std::ifstream compare_md(run_of(second) / "compare.md");
  std::stringstream text;
  text << compare_md.rdbuf();
  EXPECT_CONTAINS(text.str(), "Skipped, so not measured tonight: gpu_thing");
}

TEST_F(NightlyTest, BadArgumentsExitTwo) {
  redline::ChildSpec spec;
  spec.argv = {std::string(SOURCE_DIR) + "/scripts/nightly", "--frobnicate"};
  spec.extra_env = {{"REDLINE_SKIP_SETUP", "1"}};
  const auto r = redline::run_child(spec);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--frobnicate");
}

}  // namespace
