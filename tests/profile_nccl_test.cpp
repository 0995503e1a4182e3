// The NCCL recorder (libredline_profile_nccl.so) without a GPU: preloaded
// into a program linked to the real NCCL (profile_nccl_child) that calls
// each entry point it stands in for. The lines it writes (one a call, with
// the collective, count, element size and ranks), the one id a group's
// calls share, the ids it hands the stand-in libcupti, and the real NCCL's
// answers passed back. The kernels those ids tie to, on a GPU, are
// scripts/gpu-check's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nccl.h>

#include "harness/core/child_process.hpp"
#include "harness/profile/trace_file.hpp"
#include "tests/recorder_run.hpp"
#include "tests/support.hpp"

using namespace redline;
using namespace redline::profile;

namespace {

redline::testing::RecorderRun run_recorder(const std::string& name, std::vector<std::string> argv,
                                           std::vector<std::pair<std::string, std::string>> env) {
  return redline::testing::run_with_recorder({PROFILE_NCCL_CHILD, NCCL_LIBRARY, "REDLINE_PROFILE_NCCL"}, "nccl_" + name,
                                             std::move(argv), std::move(env));
}

}  // namespace

TEST(ProfileNccl, EachCallRecordedWithItsSizeAndAGroupSharesOneId) {
  const auto run = run_recorder("fake_cupti", {FAKE_CUPTI}, {{"NVTX_INJECTION64_PATH", FAKE_CUPTI}});
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end() << "\n" << run.result.output;
  const auto& calls = run.lines.nccl_calls;
  ASSERT_EQ(calls.size(), 13u) << run.result.output;
  const auto expect = [&](std::size_t i, const std::string& collective, std::int64_t count, std::int64_t bytes) {
    EXPECT_EQ(calls[i].collective, collective) << i;
    EXPECT_EQ(calls[i].count, count) << i;
    EXPECT_EQ(calls[i].element_bytes, bytes) << i;
    EXPECT_EQ(calls[i].ranks, 0) << i;  // a null communicator: NCCL cannot say
  };
  expect(0, "all_reduce", 1000, 2);
  expect(1, "all_gather", 64, 4);
  expect(2, "reduce_scatter", 32, 2);
  expect(3, "broadcast", 5, 8);
  expect(4, "broadcast", 6, 1);  // ncclBcast, recorded once even if NCCL makes it of ncclBroadcast
  expect(5, "reduce", 7, 8);
  expect(6, "alltoall", 8, 1);
  expect(7, "gather", 11, 1);
  expect(8, "scatter", 12, 4);
  expect(9, "send", 9, 4);
  expect(10, "recv", 10, 4);
  expect(11, "all_reduce", 13, 4);  // inside the simulated group
  expect(12, "all_reduce", 14, 4);  // after it
  EXPECT_EQ(calls[1].external_id, calls[2].external_id);  // one group, one launch
  EXPECT_NE(calls[0].external_id, calls[1].external_id);
  for (std::size_t i = 3; i < calls.size(); ++i) EXPECT_NE(calls[i].external_id, calls[i - 1].external_id) << i;
  for (const NcclCallRecord& c : calls) {
    EXPECT_EQ(c.external_id >> 32, calls[0].external_id >> 32);  // the process id's half
    EXPECT_NE(c.external_id & 0x80000000LL, 0) << "the NCCL recorder's tag, apart from the GEMM recorder's ids";
  }
  EXPECT_TRUE(run.lines.problems.empty()) << run.lines.problems.front();
  // Forwarded: the real NCCL's answers to a null communicator.
  EXPECT_CONTAINS(run.result.output, "all_reduce status " + std::to_string(ncclInvalidArgument));
  EXPECT_CONTAINS(run.result.output, "group start status " + std::to_string(ncclSuccess));
  // Twelve launches' ids: ten calls outside a group, and the two groups' ones.
  EXPECT_CONTAINS(run.result.output, "external ids pushed 12 popped 12");
}

TEST(ProfileNccl, WithoutCuptiCallsAreRecordedAndTheFileSaysSo) {
  const auto run = run_recorder("no_cupti", {}, {{"NVTX_INJECTION64_PATH", ""}});
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end() << "\n" << run.result.output;
  EXPECT_EQ(run.lines.nccl_calls.size(), 13u);
  ASSERT_EQ(run.lines.problems.size(), 1u);
  EXPECT_CONTAINS(run.lines.problems[0], "no libcupti loaded from NVTX_INJECTION64_PATH");
  EXPECT_CONTAINS(run.lines.problems[0], "NCCL calls are recorded without their kernels");
}

// A call made before cuInit loaded CUPTI (NCCL's communicators are often
// made inside a group) is recorded without an id CUPTI took; the calls
// after it are tied as usual, and no problem is reported.
TEST(ProfileNccl, CuptiLoadedAfterTheFirstCallIsStillFound) {
  const auto run = run_recorder("late", {"--late", FAKE_CUPTI}, {{"NVTX_INJECTION64_PATH", FAKE_CUPTI}});
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end() << "\n" << run.result.output;
  EXPECT_EQ(run.lines.nccl_calls.size(), 2u);
  EXPECT_CONTAINS(run.result.output, "external ids pushed 1 popped 1");
  EXPECT_TRUE(run.lines.problems.empty()) << run.lines.problems.front();
}
