// attention_bench plan end to end (the real binary, ATTENTION_BENCH_BIN): the
// layouts, their rows and ranking, bad input (exit 2, the flag named, no
// report written), and sweep without a GPU (exit 77).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/core/child_process.hpp"
#include "harness/report/csv_reader.hpp"
#include "support.hpp"

using namespace redline;
namespace fs = std::filesystem;

namespace {

class AttentionBenchPlan : public redline::testing::ToolTest {
 protected:
  const char* binary() const override { return ATTENTION_BENCH_BIN; }
};

TEST_F(AttentionBenchPlan, RanksTheHeadLayoutsOfAHiddenSize) {
  const auto csv = dir_ / "plan.csv", json = dir_ / "plan.json";
  const ChildResult child = run({"plan", "--hidden", "4096", "--heads", "16,32,48,64", "--seq", "4096", "--csv",
                                 csv.string(), "--json", json.string()});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_CONTAINS(child.output, "best:       a_q=32 a_kv=32 d=128");
  EXPECT_CONTAINS(child.output, "rank 3:     a_q=64 a_kv=64 d=64");
  EXPECT_CONTAINS(child.output, "slower: exponentials");
  EXPECT_CONTAINS(child.output, "H100 SXM: 132 SMs, sm_90");
  // The H100 reference holds no sweep of this shape: the output says so, and which sweep would settle it.
  EXPECT_CONTAINS(child.output, "measured:   none: the ranking is the model's guess");
  EXPECT_CONTAINS(child.output, "`attention_bench sweep --hidden 4096 --heads 16,32,48,64 --seq 4096 --batch 1 --dtype bf16`");

  const CsvTable t = read_csv(csv);
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.value(0, "tool"), "attention_bench");
  EXPECT_EQ(t.value(1, "head_dim"), "128");
  EXPECT_EQ(t.value(1, "rank"), "1");
  EXPECT_GT(std::stod(t.value(1, "predicted_block_ms")), 0);
  EXPECT_DOUBLE_EQ(std::stod(t.value(1, "fwd_gflop")), 4.0 * 32 * 4096 * 4096 * 128 / 1e9);
  EXPECT_EQ(t.value(1, "fa3_head_dim"), "128");
  EXPECT_CONTAINS(t.value(1, "note"), "cuDNN fwd d = 128 has its own kernel");
  // 4096 / 48 is not whole: listed, with the reason, never ranked.
  EXPECT_EQ(t.value(2, "status"), "skipped");
  EXPECT_CONTAINS(t.value(2, "note"), "infeasible: h % a_q == 0 not met");
  EXPECT_EQ(t.value(2, "rank"), "");

  std::ifstream in(json);
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["context"]["redline"]["tool"], "attention_bench");
}

// Against the H200 reference of this very shape, each layout's measured time and gap beside the model's.
TEST_F(AttentionBenchPlan, ShowsTheMeasuredRankingWhereTheReferenceHoldsTheShape) {
  const ChildResult child = run({"plan", "--hidden", "5120", "--heads", "32,40,64", "--kv-heads", "8", "--causal",
                                 "--batch", "2", "--gpu", "H200"});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_CONTAINS(child.output, "best:       a_q=40 a_kv=8 d=128");
  EXPECT_CONTAINS(child.output, "measured:   a_q=32 a_kv=8 d=160: 8.80 ms, 22.8% slower (predicted 18.1%), on H200, "
                                "2026-11-26, transcribed");
  EXPECT_CONTAINS(child.output, "measured:   a_q=40 a_kv=8 d=128: 7.16 ms, fastest");
}

TEST_F(AttentionBenchPlan, NoFeasibleLayoutIsBadInput) {
  const ChildResult child = run({"plan", "--hidden", "4096", "--heads", "3"});
  EXPECT_EQ(child.exit_code, 2) << child.output;
  EXPECT_CONTAINS(child.output, "--heads '3': no feasible layout of hidden 4096: infeasible: h % a_q == 0 not met");
}

// FP8 runs only d = 128 both ways: at d = 64 and 32 nothing runs, so no layout is best.
TEST_F(AttentionBenchPlan, NoLayoutThatRunsIsBadInput) {
  const ChildResult child = run({"plan", "--hidden", "4096", "--heads", "64,128", "--dtype", "fp8", "--gpu", "H200"});
  EXPECT_EQ(child.exit_code, 2) << child.output;
  EXPECT_CONTAINS(child.output, "--dtype 'fp8': no layout of hidden 4096 runs in it here (a_q=64");
  EXPECT_CONTAINS(child.output, "cannot run: no_fused_kernel: cuDNN runs no fused kernel for it (");
  EXPECT_CONTAINS(child.output, "unfused_kernel: the unfused path runs bf16 and fp16 only");
  EXPECT_NOT_CONTAINS(child.output, "best:");
}

TEST_F(AttentionBenchPlan, NamesThePaddingAndTheMissingKernel) {
  const auto csv = dir_ / "plan.csv";
  const ChildResult child =
      run({"plan", "--hidden", "5120", "--heads", "32,40,64", "--kv-heads", "8", "--causal", "--csv", csv.string()});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  const CsvTable t = read_csv(csv);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.value(0, "head_dim"), "160");
  EXPECT_EQ(t.value(0, "fa3_head_dim"), "192");  // FlashAttention-3 rounds 160 up
  EXPECT_CONTAINS(t.value(2, "note"), "rounds d = 80 up to 96");
  EXPECT_CONTAINS(t.value(2, "note"), "d % 64 == 0 not met");
  EXPECT_EQ(t.value(2, "causal"), "yes");

  // d = 132 runs no fused kernel: the plan says so, and ranks it last.
  const ChildResult odd = run({"plan", "--hidden", "4224", "--heads", "32,33", "--csv", csv.string()});
  ASSERT_EQ(odd.exit_code, 0) << odd.output;
  EXPECT_CONTAINS(odd.output, "no_fused_kernel: cuDNN runs no fused kernel for it");
}

TEST_F(AttentionBenchPlan, BadInputNamesTheFlag) {
  expect_usage_error({"plan", "--hidden", "0"}, "--hidden '0'");
  expect_usage_error({"plan", "--hidden", "4096", "--heads", "8192"}, "--heads '8192'");
  expect_usage_error({"plan", "--hidden", "20"}, "no head count gives a head dim between 32 and 256");
  expect_usage_error({"plan", "--hidden", "4096", "--dtype", "fp32"}, "--dtype 'fp32'");
  expect_usage_error({"plan", "--hidden", "4096", "--gpu", "V100"}, "--gpu 'V100'");
  expect_usage_error({"plan", "--hidden", "4096", "--seq", "-1"}, "--seq '-1'");
  expect_usage_error({"plan", "--hidden", "4096", "--kv-heads", "x"}, "--kv-heads 'x'");
  expect_usage_error({"plan", "--hidden", "4096", "--heads", "32,0"}, "--heads '32,0'");
  expect_usage_error({"plan", "--hidden", "4096", "--heads", "32", "--kv-heads", "0"}, "--kv-heads '0'");
  expect_usage_error({"sweep", "--hidden", "4096", "--heads", "32", "--batch", "0,2"}, "--batch '0,2'");
  expect_usage_error({"plan", "--hidden", "4096", "--batch", "1,2"}, "--batch '1,2'");
  expect_usage_error({"sweep", "--hidden", "4096", "--dtype", "int8"}, "--dtype 'int8'");
  expect_usage_error({"sweep", "--hidden", "4096", "--path", "flash"}, "--path 'flash'");
  expect_usage_error({"sweep", "--hidden", "4096", "--direction", "up"}, "--direction 'up'");
  expect_usage_error({"sweep", "--hidden", "4096", "--max-time", "-1"}, "--max-time '-1'");
  expect_usage_error({"sweep", "--hidden", "4096", "--dtype", "fp8", "--path", "unfused"}, "--path 'unfused'");
  expect_usage_error({"sweep", "--hidden", "4096", "--path", "cudnn", "--unfused-gemms"}, "--path 'cudnn'");
  expect_usage_error({"sweep", "--hidden", "4096", "--dtype", "fp8", "--unfused-gemms"}, "--dtype 'fp8'");
  expect_usage_error({"plan", "--hidden", "4096", "--heads", "auto,32"}, "--heads 'auto,32': auto stands alone");
  expect_usage_error({"plan", "--hidden", "4096", "--heads", "32,"}, "--heads '32,': has an empty item");
  expect_usage_error({"plan", "--hidden", "4096", "--heads", "1:4096", "--kv-heads", "1:400"},
                     "makes 1638400 layouts; the limit is 10000");
  // An empty value would read as the flag left out (the default GPU).
  expect_usage_error({"plan", "--hidden", "4096", "--gpu", ""}, "--gpu '': is empty");
  expect_usage_error({"sweep", "--hidden", "4096", "--json", ""}, "--json '': is empty");
}

// One file named twice keeps only the JSON; a refused run leaves no
// directory it made for its reports behind.
TEST_F(AttentionBenchPlan, OutputFilesAreRefusedBeforeAnythingIsLeftBehind) {
  const auto same = dir_ / "plan.out";
  ChildResult child = run({"plan", "--hidden", "4096", "--csv", same.string(), "--json", same.string()});
  EXPECT_EQ(child.exit_code, 2) << child.output;
  EXPECT_CONTAINS(child.output, "is also the --csv file");
  EXPECT_FALSE(fs::exists(same));

  const auto nested = dir_ / "new" / "deeper" / "plan.csv";
  child = run({"plan", "--hidden", "4096", "--csv", nested.string(), "--json", "/proc/plan.json"});
  EXPECT_EQ(child.exit_code, 2) << child.output;
  EXPECT_CONTAINS(child.output, "--json '/proc/plan.json': cannot be written");
  EXPECT_FALSE(fs::exists(dir_ / "new"));
}

// Good input without a GPU is "cannot run here" (77) with the reason.
TEST_F(AttentionBenchPlan, SweepWithoutAGpuSkipsWithTheReason) {
  const auto csv = dir_ / "sweep.csv";
  const ChildResult child = run({"sweep", "--hidden", "1024", "--heads", "8", "--seq", "256", "--unfused-gemms",
                                 "--csv", csv.string()});
  if (child.exit_code == 0) GTEST_SKIP() << "this machine has a GPU: covered by scripts/gpu-check";
  EXPECT_EQ(child.exit_code, 77) << child.output;
  EXPECT_CONTAINS(child.output, "attention_bench: skipped: ");
  EXPECT_FALSE(fs::exists(csv));
}

}  // namespace
