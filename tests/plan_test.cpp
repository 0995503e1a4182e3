// redline plan end to end, the real binary: the issue's example from flags,
// bad input (exit 2 naming the flag and the value), and --from on a run
// folder the real tools write in the test (redline suite running batch_sweep
// on fake_train, allreduce_bench on the MPI host backend, checkpoint_bench).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/core/child_process.hpp"
#include "harness/report/csv_reader.hpp"
#include "tests/support.hpp"

namespace fs = std::filesystem;
using namespace redline;
using redline::testing::read_all;

namespace {

class PlanCommand : public redline::testing::TempDirTest {
 protected:
  ChildResult plan(std::vector<std::string> args) {
    ChildSpec spec;
    spec.argv = {REDLINE_BIN, "plan"};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.timeout_seconds = 60;
    return run_child(spec);
  }
  void expect_usage_error(std::vector<std::string> args, const std::string& names) {
    args.insert(args.end(), {"--csv", (dir_ / "bad.csv").string()});
    const ChildResult child = plan(args);
    EXPECT_EQ(child.exit_code, 2) << child.output;
    EXPECT_CONTAINS(child.output, names);
    EXPECT_FALSE(fs::exists(dir_ / "bad.csv"));
  }
  static std::vector<std::string> example() {
    return {"--step-time-ms", "1000", "--mbs", "4", "--dp", "8", "--gbs", "512", "--samples", "1024000",
            "--grad-bytes", "14e9", "--busbw", "100"};
  }
  static std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  // The arguments without one flag and its value.
  static std::vector<std::string> without(std::vector<std::string> args, const std::string& flag) {
    for (std::size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == flag) args.erase(args.begin() + i, args.begin() + i + 2);
    return args;
  }
  // The arguments with one flag's value replaced.
  static std::vector<std::string> swap(std::vector<std::string> args, const std::string& flag,
                                       const std::string& value) {
    for (std::size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == flag) args[i + 1] = value;
    return args;
  }
};

TEST_F(PlanCommand, TheIssuesExampleFromFlags) {
  const auto csv = dir_ / "plan.csv", json = dir_ / "plan.json";
  const ChildResult child = plan(with(example(), {"--csv", csv.string(), "--json", json.string()}));
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_CONTAINS(child.output, "GBS 512 = MBS 4 x GA 16 x DP 8");
  EXPECT_CONTAINS(child.output, "0.245 s = 14000000000 B x 2(8-1)/8 / 100.000 GB/s");
  EXPECT_CONTAINS(child.output, "16.245 s = compute + exposed");
  EXPECT_CONTAINS(child.output, "32490 s (9.025 h) = 2000 x 16.245 s, before checkpoints");
  const CsvTable t = read_csv(csv);
  ASSERT_EQ(t.rows.size(), 5u);
  EXPECT_EQ(t.value(0, "tool"), "redline_plan");
  EXPECT_EQ(t.value(0, "case_key"), "scenario=plan;gbs=512;mbs=4;ga=16;dp=8");
  EXPECT_NEAR(std::stod(t.value(0, "allreduce_s")), 0.245, 1e-12);
  EXPECT_NEAR(std::stod(t.value(0, "opt_step_time_s")), 16.245, 1e-12);
  EXPECT_EQ(t.value(0, "optimizer_steps"), "2000");
  EXPECT_NEAR(std::stod(t.value(0, "train_h")), 9.025, 1e-12);
  EXPECT_EQ(t.value(1, "case_key"), "scenario=dp_doubled;gbs=512;mbs=4;ga=8;dp=16");
  EXPECT_EQ(t.value(2, "status"), "skipped");
  const auto j = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(j["context"]["redline"]["summary"]["optimizer_steps"], "2000 = ceil(1024000 samples / GBS 512)");
}

TEST_F(PlanCommand, BadInputIsExit2NamingTheFlagAndValue) {
  expect_usage_error(swap(example(), "--gbs", "500"), "--gbs '500': (--gbs) is not a multiple of --dp 8 (--dp)");
  expect_usage_error(swap(example(), "--mbs", "0"), "--mbs '0'");
  expect_usage_error(swap(example(), "--busbw", "-3"), "--busbw '-3'");
  expect_usage_error(swap(example(), "--step-time-ms", "0"), "--step-time-ms '0'");
  expect_usage_error(swap(example(), "--samples", "abc"), "--samples 'abc'");
  expect_usage_error(with(example(), {"--overlap", "1.5"}), "--overlap '1.5'");
  expect_usage_error(with(example(), {"--ckpt-stall", "2"}), "--restore");
  expect_usage_error(with(example(), {"--from", (dir_ / "nope").string()}), "no such run folder");
  std::ofstream(dir_ / "ar.csv") << "tool,bytes,busbw_GBps,status\nx,8,1,ok\n";
  auto no_busbw = example();
  no_busbw.resize(no_busbw.size() - 2);
  expect_usage_error(with(no_busbw, {"--allreduce", (dir_ / "ar.csv").string()}),
                     "--allreduce '" + (dir_ / "ar.csv").string() + "': has no 'collective' column");
  expect_usage_error(no_busbw, "--busbw");
}

// Batch figures past what any run has (2^40 samples, 2^20 ranks, as
// batch_sweep takes) are refused with the limit: the int64 maximum as --mbs
// crashed the plan, and a huge --gbs or --dp printed an overflowed GBS.
TEST_F(PlanCommand, BatchFiguresAboveTheirBoundsAreRefusedWithTheLimit) {
  const std::string max_int64 = "9223372036854775807";
  expect_usage_error(swap(example(), "--mbs", max_int64),
                     "--mbs '" + max_int64 + "': must be between 1 and 1099511627776");
  expect_usage_error(swap(example(), "--gbs", "9223372036854775800"),
                     "--gbs '9223372036854775800': must be between 1 and 1099511627776");
  expect_usage_error(swap(swap(example(), "--gbs", "4611686018427387904"), "--dp", "4611686018427387904"),
                     "--dp '4611686018427387904': must be between 1 and 1048576");
  expect_usage_error(with(example(), {"--recommended-mbs", max_int64}),
                     "--recommended-mbs '" + max_int64 + "': must be between 1 and 1099511627776");
  // At the bounds the plan runs.
  const ChildResult at_bound = plan(swap(swap(example(), "--gbs", "1099511627776"), "--dp", "1048576"));
  EXPECT_EQ(at_bound.exit_code, 0) << at_bound.output;
  EXPECT_CONTAINS(at_bound.output, "GBS 1099511627776 = MBS 4 x GA 262144 x DP 1048576");
}

// Figures outside what a run can physically have are refused with the range;
// they printed overflowed step counts, inf hours and 60-digit totals.
TEST_F(PlanCommand, FiguresOutsideTheirRangesAreRefusedWithTheRange) {
  const auto ckpt = with(example(), {"--ckpt-stall", "10", "--restore", "60", "--mtbf", "24"});
  expect_usage_error(swap(example(), "--samples", "1e300"), "--samples '1e300': must be above 0 and at most 1e+15");
  expect_usage_error(with(example(), {"--epochs", "1e300"}), "--epochs '1e300': must be above 0 and at most 1000000");
  expect_usage_error(with(without(example(), "--samples"), {"--tokens", "1e9", "--seq", "1e-300"}),
                     "--seq '1e-300': must be between 1 and 1000000000");
  expect_usage_error(swap(example(), "--step-time-ms", "1e308"),
                     "--step-time-ms '1e308': must be above 0 and at most 86400000");
  expect_usage_error(swap(ckpt, "--restore", "1e308"), "--restore '1e308': must be between 0 and 86400");
  expect_usage_error(swap(ckpt, "--ckpt-stall", "1e308"), "--ckpt-stall '1e308': must be above 0 and at most 86400");
  expect_usage_error(swap(ckpt, "--mtbf", "1e-300"), "--mtbf '1e-300': must be between 0.01 and 10000000");
  expect_usage_error(swap(example(), "--busbw", "1e-300"), "--busbw '1e-300': must be between 0.001 and 100000");
  expect_usage_error(with(example(), {"--expect-busbw", "1e300"}),
                     "--expect-busbw '1e300': must be between 0.001 and 100000");
  expect_usage_error(swap(example(), "--grad-bytes", "1e300"), "--grad-bytes '1e300': must be above 0 and at most 1e+15");
  expect_usage_error(with(example(), {"--bucket-mb", "1e300"}), "--bucket-mb '1e300': must be above 0 and at most 1048576");
}

// Each figure in range, together past the step bound: refused naming the
// figures that make the run (it printed a negative step count).
TEST_F(PlanCommand, ARunPastTheOptimizerStepBoundIsRefused) {
  const auto tiny_batch = swap(swap(swap(example(), "--gbs", "1"), "--dp", "1"), "--mbs", "1");
  expect_usage_error(with(swap(tiny_batch, "--samples", "1e15"), {"--epochs", "1e6"}),
                     "--samples '1e15': the run takes 1e+21 optimizer steps (--samples x --epochs 1e6 / GBS 1); a plan "
                     "projects at most 10^12");
  const ChildResult at_bound = plan(swap(tiny_batch, "--samples", "1e12"));
  EXPECT_EQ(at_bound.exit_code, 0) << at_bound.output;
  EXPECT_CONTAINS(at_bound.output, "1000000000000 = ceil(1000000000000 samples / GBS 1)");
}

// A flag the plan would ignore, or one that contradicts another, is refused
// (each exited 0 before, the flag unread).
TEST_F(PlanCommand, IgnoredOrContradictoryFlagsAreRefused) {
  // --grad-dtype also picks the all-reduce CSV's dtype, so it is checked with --grad-bytes too.
  expect_usage_error(with(example(), {"--grad-dtype", "foo"}), "--grad-dtype 'foo': use bf16 or fp32");
  expect_usage_error(with(example(), {"--params", "7e9"}), "--grad-bytes/--params '14e9/7e9': give one");
  expect_usage_error(with(example(), {"--seq", "2048"}), "--seq '2048': only with --tokens");
  expect_usage_error(with(example(), {"--async-snapshot", "1"}),
                     "--ckpt-stall '': required with the other checkpoint figures");
  expect_usage_error(
      with(example(), {"--ckpt-stall", "10", "--restore", "60", "--mtbf", "24", "--async-snapshot", "1"}),
      "--async-persist '': required with --async-snapshot");
  const ChildResult both = plan(with(example(), {"--ckpt-stall", "10", "--restore", "60", "--mtbf", "24",
                                                 "--async-snapshot", "1", "--async-persist", "30"}));
  EXPECT_EQ(both.exit_code, 0) << both.output;
  EXPECT_CONTAINS(both.output, "knob async_checkpoint:  async checkpoint save instead of sync: GBS 512");
}

// An empty value is refused, not read as the flag left out (--from '' ran
// without the folder), and a CSV path that is not a readable file says why.
TEST_F(PlanCommand, EmptyValuesAndUnreadablePathsSayWhatIsWrong) {
  expect_usage_error(with(example(), {"--from", ""}), "--from '': is empty");
  expect_usage_error(with(example(), {"--sweep", ""}), "--sweep '': is empty");
  auto no_busbw = without(example(), "--busbw");
  expect_usage_error(with(no_busbw, {"--allreduce", "/dev/null"}), "--allreduce '/dev/null': is not a regular file");
  expect_usage_error(with(no_busbw, {"--allreduce", dir_.string()}),
                     "--allreduce '" + dir_.string() + "': is a directory");
  std::ofstream(dir_ / "empty.csv").close();
  expect_usage_error(with(no_busbw, {"--allreduce", (dir_ / "empty.csv").string()}), "empty file");
  expect_usage_error(with(no_busbw, {"--allreduce", (dir_ / "nope.csv").string()}), "no such file");
  expect_usage_error(with(example(), {"--from", "/dev/null"}), "--from '/dev/null': is not a folder");
}

#if defined(ALLREDUCE_BENCH_BIN)
// A suite run of the real tools, then the plan from its folder.
// A run folder's all-reduce CSV with a size that is not a number is bad
// input naming the file, not a crash.
// A real batch_sweep of a command that prints no step line: its throughput,
// and so its step_time_ms, is the trials' wall time over --steps.
class PlanOnASweep : public PlanCommand {
 protected:
  void sweep(const std::string& stem) {
    ChildSpec spec;
    spec.argv = {BATCH_SWEEP_BIN, "--batch-sizes", "2,4", "--global-batch", "8", "--csv", (dir_ / (stem + ".csv")).string(),
                 "--json", (dir_ / (stem + ".json")).string(), "--", "/bin/sh", "-c", "sleep 0.05"};
    spec.timeout_seconds = 60;
    const ChildResult ran = run_child(spec);
    ASSERT_EQ(ran.exit_code, 0) << ran.output;
  }
  ChildResult plan_on(const std::string& stem, const std::vector<std::string>& more = {}) {
    return plan(with({"--sweep", (dir_ / (stem + ".csv")).string(), "--samples", "1e6", "--grad-bytes", "1e9",
                      "--busbw", "100"},
                     more));
  }
};

TEST_F(PlanOnASweep, AWallTimeStepTimeIsMarkedAsAnUpperBound) {
  sweep("sweep");
  const ChildResult child = plan_on("sweep");
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_CONTAINS(child.output, "the trial's wall time / --steps, start-up included: an upper bound");
}

TEST_F(PlanOnASweep, AJsonOfAnotherRunBesideTheCsvIsRefused) {
  sweep("sweep");
  // Another process: another run id (it carries the pid).
  sweep("other");
  fs::copy_file(dir_ / "other.json", dir_ / "sweep.json", fs::copy_options::overwrite_existing);
  const ChildResult child = plan_on("sweep");
  EXPECT_EQ(child.exit_code, 2) << child.output;
  EXPECT_CONTAINS(child.output, "--sweep '" + (dir_ / "sweep.csv").string() + "'");
  EXPECT_CONTAINS(child.output, "sweep.json beside it reports another run");
  // Its own JSON is read.
  EXPECT_EQ(plan_on("other").exit_code, 0);
}

// The plan's reports may not replace the files its figures come from: the
// sweep's CSV, or the JSON beside it whose recommendation the plan reads.
TEST_F(PlanOnASweep, AnOutputNamingAnInputIsRefusedAndTheInputKept) {
  sweep("sweep");
  const std::string csv = (dir_ / "sweep.csv").string(), json = (dir_ / "sweep.json").string();
  const std::string csv_before = read_all(csv), json_before = read_all(json);
  auto onto_csv = plan_on("sweep", {"--csv", csv});
  EXPECT_EQ(onto_csv.exit_code, 2) << onto_csv.output;
  EXPECT_CONTAINS(onto_csv.output, "--csv '" + csv + "': is also the --sweep file");
  auto onto_json = plan_on("sweep", {"--json", json});
  EXPECT_EQ(onto_json.exit_code, 2) << onto_json.output;
  EXPECT_CONTAINS(onto_json.output, "--json '" + json + "': is also the --sweep (its JSON) file");
  EXPECT_EQ(read_all(csv), csv_before);
  EXPECT_EQ(read_all(json), json_before);
}

TEST_F(PlanCommand, ARunFoldersUnreadableSizeIsNamed) {
  const fs::path run = dir_ / "run";
  fs::create_directories(run);
  std::ofstream(run / "allreduce.csv") << "tool,collective,bytes,dtype,op,inplace,busbw_GBps,status\n"
                                          "allreduce_bench,all_reduce,,float,sum,1,10,ok\n";
  const ChildResult child = plan({"--from", run.string(), "--samples", "1e6", "--grad-bytes", "14e9"});
  EXPECT_EQ(child.exit_code, 2) << child.output;
  EXPECT_CONTAINS(child.output, "allreduce.csv");
  EXPECT_CONTAINS(child.output, "bytes");
}

TEST_F(PlanCommand, FromARealSuiteRun) {
  const fs::path suite = dir_ / "suite", runs = dir_ / "runs", ckpt = dir_ / "ckpt";
  fs::create_directories(ckpt);
  std::ofstream(suite) << "sweep " BATCH_SWEEP_BIN " --max 64 --global-batch 256 --data-parallel 2 --metric-regex "
                          "\"throughput: ([0-9.]+) samples/s\" -- " FAKE_TRAIN_BIN
                          " --batch-size {bs} --saturate-at 16 --max-fit 40 --step-ms 2\n"
                          "allreduce " MPIEXEC " --oversubscribe --allow-run-as-root -np 2 " ALLREDUCE_BENCH_BIN
                          " --backend host -b 1M -e 64M -f 4 -c 1\n"
                          // Sorts first, but stops below the bucket: not the one to read.
                          "allreduce-small " MPIEXEC " --oversubscribe --allow-run-as-root -np 2 " ALLREDUCE_BENCH_BIN
                          " --backend host -b 1K -e 1M -f 32 -c 1 --collective all\n"
                       << "ckpt " CHECKPOINT_BENCH_BIN " all --size 16M --rounds 2 --dir " << ckpt.string()
                       << " --mtbf 24\n";
  ChildSpec spec;
  spec.argv = {REDLINE_BIN, "suite", suite.string(), "--runs", runs.string(), "--history", ""};
  spec.timeout_seconds = 240;
  const ChildResult ran = run_child(spec);
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  const fs::path run = fs::directory_iterator(runs)->path();

  const auto csv = dir_ / "plan.csv";
  const ChildResult child = plan({"--from", run.string(), "--samples", "1e6", "--params", "125e6", "--grad-dtype",
                                  "fp32", "--csv", csv.string()});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_CONTAINS(child.output, "GBS 256 = MBS 16 x GA 8 x DP 2");  // the sweep's GBS and DP, its recommended MBS
  EXPECT_CONTAINS(child.output, "MBS 16 (sweep.json recommended_batch), DP 2 (sweep.json gradient_accumulation)");
  EXPECT_CONTAINS(child.output, "sweep.csv line");
  EXPECT_CONTAINS(child.output, "allreduce.csv (all_reduce float in place, lines");  // the one reaching 64M
  EXPECT_NOT_CONTAINS(child.output, "allreduce-small.csv");
  EXPECT_CONTAINS(child.output, "measured at 2 ranks");
  EXPECT_CONTAINS(child.output, "ckpt.csv line");

  // Each figure is the CSV's own: the step time at MBS 16, Young/Daly on the save.
  const CsvTable sweep = read_csv(run / "sweep.csv"), ck = read_csv(run / "ckpt.csv"), out = read_csv(csv);
  for (std::size_t r = 0; r < sweep.rows.size(); ++r)
    if (sweep.value(r, "batch_size") == "16") EXPECT_EQ(std::stod(out.value(0, "micro_step_ms")), std::stod(sweep.value(r, "step_time_ms")));
  for (std::size_t r = 0; r < ck.rows.size(); ++r)
    if (ck.value(r, "stage") == "save")
      EXPECT_NEAR(std::stod(out.value(0, "ckpt_interval_s")), std::sqrt(2 * std::stod(ck.value(r, "time_s")) * 86400), 1e-6);
  const double busbw = std::stod(out.value(0, "busbw_used_GBps"));
  EXPECT_NEAR(std::stod(out.value(0, "allreduce_s")), 5e8 * 1.0 / (busbw * 1e9), 1e-9);  // 2(2-1)/2 = 1

  // Flags override the run's figures.
  const ChildResult over = plan({"--from", run.string(), "--samples", "1e6", "--params", "125e6", "--dp", "4",
                                 "--gbs", "512", "--busbw", "10"});
  ASSERT_EQ(over.exit_code, 0) << over.output;
  EXPECT_CONTAINS(over.output, "GBS 512 = MBS 16 x GA 8 x DP 4");
  EXPECT_CONTAINS(over.output, "DP 4 (--dp), GBS 512 (--gbs)");
  EXPECT_CONTAINS(over.output, "GB/s at the 25M all-reduce message (--busbw)");
}
#endif

}  // namespace
