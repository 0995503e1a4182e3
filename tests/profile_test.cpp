// redline profile's pure parts on synthetic activity records: the trace
// file, step detection (NVTX ranges, output lines, the repeating kernel
// sequence), each step's idle split, categories and NCCL overlap, the top
// kernels, and the categories against measured ceilings.
#include <gtest/gtest.h>

#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/profile/call_kernels.hpp"
#include "harness/profile/ceilings.hpp"
#include "harness/profile/device_choice.hpp"
#include "harness/profile/gemm_calls.hpp"
#include "harness/profile/intervals.hpp"
#include "harness/profile/nccl_calls.hpp"
#include "harness/profile/profile_report.hpp"
#include "harness/profile/step_breakdown.hpp"
#include "harness/profile/step_detection.hpp"
#include "harness/profile/trace_file.hpp"
#include "harness/profile/trial_profile.hpp"
#include "harness/report/output.hpp"
#include "tests/support.hpp"

using namespace redline;
using namespace redline::profile;

namespace {

constexpr const char* kGemm = "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT";
constexpr const char* kNccl = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

Activity kernel(std::string name, std::int64_t start, std::int64_t end, std::uint32_t stream = 7) {
  return {.kind = ActivityKind::kernel, .start_ns = start, .end_ns = end, .stream = stream, .name = std::move(name)};
}

Activity copy(CopyKind kind, std::int64_t start, std::int64_t end, std::int64_t bytes) {
  return {.kind = ActivityKind::memcpy, .start_ns = start, .end_ns = end, .copy = kind, .bytes = bytes};
}

Activity range(std::string name, std::int64_t start, std::int64_t end) {
  return {.kind = ActivityKind::range, .start_ns = start, .end_ns = end, .name = std::move(name)};
}

TEST(ProfileTrace, RecordsReadBackAsWritten) {
  Trace trace;
  trace.activities = {kernel("void k<float>(int)\twith a tab", 10, 20), copy(CopyKind::d2h, 30, 40, 4096),
                      {.kind = ActivityKind::memset, .start_ns = 41, .end_ns = 42, .bytes = 64}, range("step 1", 5, 50)};
  std::string text = trace_header();
  for (const Activity& a : trace.activities) text += trace_line(a);
  text += gemm_line({.time_ns = 9, .m = 4096, .n = 4096, .k = 1024, .batch = 1, .dtype = "bf16"});
  text += clock_line(1000, 51000) + dropped_line(3) + problem_line("cuptiActivityEnable(MARKER): not supported");
  const Trace back = parse_trace(text, "t.trace");
  ASSERT_EQ(back.activities.size(), 4u);
  EXPECT_EQ(back.activities[0].name, "void k<float>(int) with a tab");
  EXPECT_EQ(back.activities[0].stream, 7u);
  EXPECT_EQ(back.activities[1].copy, CopyKind::d2h);
  EXPECT_EQ(back.activities[1].bytes, 4096);
  EXPECT_EQ(back.activities[2].kind, ActivityKind::memset);
  EXPECT_EQ(back.activities[3].name, "step 1");
  ASSERT_EQ(back.gemms.size(), 1u);
  EXPECT_DOUBLE_EQ(back.gemms[0].flop(), 2.0 * 4096 * 4096 * 1024);
  EXPECT_TRUE(back.has_clock);
  EXPECT_EQ(back.clock_offset_ns, 50000);
  EXPECT_EQ(back.dropped, 3);
  EXPECT_EQ(back.problems, std::vector<std::string>{"cuptiActivityEnable(MARKER): not supported"});
}

TEST(ProfileTrace, GemmCallsAndCorrelationsReadBackAsWritten) {
  std::string text = trace_header();
  text += gemm_call_line({.external_id = 7, .m = 4096, .n = 1024, .k = 512, .batch = 3, .dtype = "bf16"});
  text += external_correlation_line(41, 7) +
          kernel_correlation_line({.correlation_id = 41, .start_ns = 123456789012, .end_ns = 123456799012});
  const Trace back = parse_trace(text, "t.trace");
  ASSERT_EQ(back.gemm_calls.size(), 1u);
  EXPECT_EQ(back.gemm_calls[0].external_id, 7);
  EXPECT_EQ(back.gemm_calls[0].m, 4096);
  EXPECT_EQ(back.gemm_calls[0].n, 1024);
  EXPECT_EQ(back.gemm_calls[0].k, 512);
  EXPECT_EQ(back.gemm_calls[0].batch, 3);
  EXPECT_EQ(back.gemm_calls[0].dtype, "bf16");
  ASSERT_EQ(back.external_correlations.size(), 1u);
  EXPECT_EQ(back.external_correlations[0].correlation_id, 41);
  EXPECT_EQ(back.external_correlations[0].external_id, 7);
  ASSERT_EQ(back.kernel_correlations.size(), 1u);
  EXPECT_EQ(back.kernel_correlations[0].start_ns, 123456789012);
  EXPECT_EQ(back.kernel_correlations[0].end_ns, 123456799012);
  EXPECT_THROW_WITH(parse_trace(trace_header() + "gemmcall\t1\t2\t3\n", "t"), std::runtime_error,
                    "t:2: gemmcall has 3 fields, expected 6");
  EXPECT_THROW_WITH(parse_trace(trace_header() + "kernelcorr\t1\t2\n", "t"), std::runtime_error,
                    "t:2: kernelcorr has 2 fields, expected 3");
  EXPECT_THROW_WITH(parse_trace(trace_header() + "range\t300\t200\tstep\n", "t"), std::runtime_error,
                    "t:2: the range ends before it starts");
}

TEST(ProfileTrace, NcclCallsReadBackAsWritten) {
  const std::string text =
      trace_header() +
      nccl_call_line({.external_id = 9, .collective = "all_gather", .count = 1024, .element_bytes = 2, .ranks = 8});
  const Trace back = parse_trace(text, "t.trace");
  ASSERT_EQ(back.nccl_calls.size(), 1u);
  EXPECT_EQ(back.nccl_calls[0].external_id, 9);
  EXPECT_EQ(back.nccl_calls[0].collective, "all_gather");
  EXPECT_EQ(back.nccl_calls[0].count, 1024);
  EXPECT_EQ(back.nccl_calls[0].element_bytes, 2);
  EXPECT_EQ(back.nccl_calls[0].ranks, 8);
  EXPECT_THROW_WITH(parse_trace(trace_header() + "ncclcall\t1\tall_reduce\t3\n", "t"), std::runtime_error,
                    "t:2: ncclcall has 3 fields, expected 5");
}

// A group's calls share its id and NCCL launches them as one: one launch
// holding both, with its kernel's time. A call outside a group is a launch
// of its own; one whose kernel the trace lacks is counted. A launch tied to
// its external id by two API records (runtime and driver) counts its kernel
// once.
TEST(ProfileNcclCalls, OneLaunchPerGroupWithItsKernelsTime) {
  Trace calls;
  calls.nccl_calls = {{.external_id = 1, .collective = "all_reduce", .count = 1000, .element_bytes = 2, .ranks = 8},
                      {.external_id = 1, .collective = "all_reduce", .count = 3000, .element_bytes = 2, .ranks = 8},
                      {.external_id = 2, .collective = "all_gather", .count = 100, .element_bytes = 4, .ranks = 8},
                      {.external_id = 3, .collective = "broadcast", .count = 5, .element_bytes = 4, .ranks = 8}};
  Trace trace;
  trace.kernel_correlations = {{.correlation_id = 10, .start_ns = 5000, .end_ns = 7000},
                               {.correlation_id = 20, .start_ns = 1000, .end_ns = 1500}};
  trace.external_correlations = {{.correlation_id = 10, .external_id = 1}, {.correlation_id = 10, .external_id = 1},
                                 {.correlation_id = 20, .external_id = 2}, {.correlation_id = 11, .external_id = 1}};
  const NcclJoin join = nccl_calls(calls, trace);
  ASSERT_EQ(join.launches.size(), 2u);
  EXPECT_EQ(join.launches[0].time_ns, 1000);  // by time: the all_gather's first
  ASSERT_EQ(join.launches[0].calls.size(), 1u);
  EXPECT_EQ(join.launches[0].kernel_ns, 500);
  EXPECT_EQ(join.launches[1].time_ns, 5000);
  ASSERT_EQ(join.launches[1].calls.size(), 2u);
  EXPECT_EQ(join.launches[1].calls[1].count, 3000);
  EXPECT_EQ(join.launches[1].kernel_ns, 2000);
  EXPECT_EQ(join.calls_without_kernel, 1u);
}

// allreduce_bench's `bytes` (nccl-tests' size) is the whole buffer: for the
// collectives whose count is one rank's block, that block times the ranks.
// A recorder's empty file beside a trace whose kernels show the work was
// done: the calls were out of its reach, and the summary says so.
TEST(ProfileRecordedCalls, NothingRecordedSaysWhenTheTraceHasSuchKernels) {
  Trace trace;
  trace.activities = {kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 0, 10),
                      kernel("ncclDevKernel_AllGather_RING_LL", 20, 30), kernel("vectorized_elementwise_kernel", 40, 50)};
  EXPECT_EQ(nothing_recorded(trace, Category::nccl, "no NCCL call was recorded", "out of reach"),
            "no NCCL call was recorded, yet the trace has 2 nccl kernels: out of reach");
  EXPECT_EQ(nothing_recorded(trace, Category::gemm, "no cuBLAS GEMM call was recorded", "out of reach"),
            "no cuBLAS GEMM call was recorded");
}

TEST(ProfileNcclCalls, MessageBytesAsTheBenchmarksSizeColumn) {
  const auto bytes = [](const char* collective, std::int64_t element_bytes, std::int64_t ranks) {
    return message_bytes({.external_id = 1, .collective = collective, .count = 1000, .element_bytes = element_bytes,
                          .ranks = ranks});
  };
  EXPECT_EQ(bytes("all_reduce", 2, 8), 2000);
  EXPECT_EQ(bytes("broadcast", 4, 8), 4000);
  EXPECT_EQ(bytes("send", 2, 8), 2000);
  EXPECT_EQ(bytes("all_gather", 2, 8), 16000);
  EXPECT_EQ(bytes("reduce_scatter", 2, 8), 16000);
  EXPECT_EQ(bytes("alltoall", 2, 8), 16000);
  EXPECT_EQ(bytes("gather", 2, 8), 16000);  // the root's whole buffer, as for all_gather
  EXPECT_EQ(bytes("scatter", 2, 8), 16000);
  EXPECT_EQ(bytes("all_reduce", 2, 0), 2000);  // the ranks do not enter it
  EXPECT_FALSE(bytes("all_gather", 2, 0));     // they do here, and are unknown
  EXPECT_FALSE(bytes("all_reduce", 0, 8));     // a datatype the recorder did not know
}

// The join in any order the records came in: a correlation before or after
// its kernel, a call with two kernels (at its first), one whose API calls
// launched nothing, and one CUPTI never correlated.
TEST(ProfileGemmCalls, EachCallAtItsFirstKernel) {
  Trace calls;
  calls.gemm_calls = {{.external_id = 1, .m = 8, .n = 8, .k = 8, .batch = 1, .dtype = "bf16"},
                      {.external_id = 2, .m = 16, .n = 4, .k = 2, .batch = 5, .dtype = "fp32"},
                      {.external_id = 3, .m = 1, .n = 1, .k = 1, .batch = 1, .dtype = "tf32"},
                      {.external_id = 4, .m = 1, .n = 1, .k = 1, .batch = 1, .dtype = "tf32"}};
  Trace trace;
  trace.kernel_correlations = {{.correlation_id = 11, .start_ns = 500}, {.correlation_id = 20, .start_ns = 900},
                               {.correlation_id = 21, .start_ns = 950}, {.correlation_id = 99, .start_ns = 10}};
  trace.external_correlations = {{.correlation_id = 21, .external_id = 2}, {.correlation_id = 11, .external_id = 1},
                                 {.correlation_id = 20, .external_id = 2}, {.correlation_id = 30, .external_id = 3}};
  const GemmJoin join = gemm_calls(calls, trace);
  ASSERT_EQ(join.gemms.size(), 2u);
  EXPECT_EQ(join.gemms[0].time_ns, 500);
  EXPECT_EQ(join.gemms[0].dtype, "bf16");
  EXPECT_EQ(join.gemms[1].time_ns, 900);
  EXPECT_EQ(join.gemms[1].batch, 5);
  EXPECT_DOUBLE_EQ(join.gemms[1].flop(), 2.0 * 16 * 4 * 2 * 5);
  EXPECT_EQ(join.without_kernel, 2u);
}

TEST(ProfileTrace, BadInputNamesTheLine) {
  const std::string header = trace_header();
  EXPECT_THROW_WITH(parse_trace("kernel\t1\t2\t0\t0\tk\n", "t"), std::runtime_error, "t:1: not a redline profile trace");
  EXPECT_THROW_WITH(parse_trace(header + "kernel\t1\tx\t0\t0\tk\n", "t"), std::runtime_error, "t:2: \"x\" is not an integer");
  EXPECT_THROW_WITH(parse_trace(header + "kernel\t5\t2\t0\t0\tk\n", "t"), std::runtime_error, "t:2: the record ends before");
  EXPECT_THROW_WITH(parse_trace(header + "bogus\t1\n", "t"), std::runtime_error, "t:2: unknown record \"bogus\"");
  EXPECT_THROW_WITH(parse_trace(header + "memcpy\t1\t2\t0\t0\tsideways\t8\n", "t"), std::runtime_error, "sideways");
  // A program killed mid-write leaves its last line short: dropped, not an error.
  const Trace cut = parse_trace(header + "kernel\t1\t2\t0\t0\tk\nkernel\t3\t", "t");
  EXPECT_EQ(cut.activities.size(), 1u);
  EXPECT_EQ(cut.dropped, 1);
}

TEST(ProfileIntervals, UnionAndSharedTime) {
  const auto a = merged({{0, 10}, {5, 15}, {20, 30}, {30, 31}, {40, 40}});
  EXPECT_EQ(a, (std::vector<Interval>{{0, 15}, {20, 31}}));
  EXPECT_EQ(covered(a), 26);
  EXPECT_EQ(shared(a, merged({{10, 25}, {29, 100}})), 5 + 5 + 2);
  EXPECT_EQ(clipped({5, 50}, 10, 20), (Interval{10, 20}));
  EXPECT_EQ(clipped({30, 50}, 10, 20).first, clipped({30, 50}, 10, 20).second);
}

TEST(ProfileCategories, KernelsCopiesAndNccl) {
  EXPECT_EQ(category_of(kernel(kGemm, 0, 1)), Category::gemm);
  EXPECT_EQ(category_of(kernel(kNccl, 0, 1)), Category::nccl);
  EXPECT_EQ(category_of(kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3", 0, 1)),
            Category::attention);
  EXPECT_EQ(category_of(kernel("void rmsnorm_forward_kernel<__nv_bfloat16>(...)", 0, 1)), Category::elementwise);
  EXPECT_EQ(category_of(copy(CopyKind::h2d, 0, 1, 8)), Category::memcpy_h2d);
  EXPECT_EQ(category_of(copy(CopyKind::d2d, 0, 1, 8)), Category::memcpy_d2d);
  EXPECT_FALSE(is_compute(Category::nccl));
  EXPECT_TRUE(is_compute(Category::gemm));
}

// Steps marked by NVTX: the outermost matching ranges, nested and unrelated
// ones left out; the default pattern takes torch.profiler's names too.
TEST(ProfileSteps, FromRanges) {
  Trace trace;
  trace.activities = {range("ProfilerStep#0", 0, 100), range("forward", 10, 40), range("optimizer step", 60, 90),
                      range("ProfilerStep#1", 100, 210), range("stepper", 300, 400), range("train_step", 400, 500)};
  const auto steps = steps_from_ranges(trace, std::regex(kDefaultStepRange));
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].end_ns, 100);
  EXPECT_EQ(steps[1].start_ns, 100);
  EXPECT_EQ(steps[2].start_ns, 400);
  // A range of no length (a mark) is no step, and cannot hide the one
  // around it from being outermost.
  trace.activities = {range("step", 50, 50), range("step", 0, 100)};
  const auto one = steps_from_ranges(trace, std::regex(kDefaultStepRange));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].end_ns, 100);
  // A range name of 50,000 characters under ".*step" overflowed libstdc++'s
  // regex recursion (a crash); its first 4096 characters are matched.
  trace.activities = {range(std::string(50000, 'x') + " step", 0, 100), range("x step", 100, 200)};
  const auto long_name = steps_from_ranges(trace, std::regex(".*step"));
  ASSERT_EQ(long_name.size(), 1u);
  EXPECT_EQ(long_name[0].start_ns, 100);
}

// A step per output line, placed on the GPU's clock by the clock line.
TEST(ProfileSteps, FromOutputLines) {
  Trace trace;
  trace.activities = {kernel("a", 1000, 1100), kernel("a", 2000, 2100), kernel("a", 3000, 3100)};
  trace.has_clock = true;
  trace.clock_offset_ns = 500000;
  const auto steps = steps_from_marks(trace, {500000 + 500, 500000 + 1900, 500000 + 2900});
  ASSERT_EQ(steps.size(), 2u);  // the first line came before any GPU work
  EXPECT_EQ(steps[0].start_ns, 1000);
  EXPECT_EQ(steps[0].end_ns, 1900);
  EXPECT_EQ(steps[1].end_ns, 2900);
  trace.has_clock = false;
  EXPECT_TRUE(steps_from_marks(trace, {501900}).empty());
}

// Six steps of four kernels with a host gap before each step's "embed";
// warm-up launches an extra kernel first. Steps start at "embed", not at the
// sequence's first kernel.
Trace periodic_trace(int steps) {
  Trace trace;
  trace.activities.push_back(kernel("autotune", 0, 50));
  std::int64_t t = 100;
  for (int s = 0; s < steps; ++s) {
    t += 5000;  // the host between steps
    for (const char* name : {"embed", kGemm, "softmax", kGemm}) {
      trace.activities.push_back(kernel(name, t, t + 1000));
      t += 1100;
    }
  }
  return trace;
}

// A step starts where the GPU went idle before its "embed": after the
// warm-up's kernel, then after the step before's last kernel. So the host's
// time between steps is each step's idle time before its first record.
TEST(ProfileSteps, FromTheRepeatingKernelSequence) {
  const Trace trace = periodic_trace(6);
  std::size_t period = 0;
  const auto steps = steps_from_kernel_period(trace, &period);
  EXPECT_EQ(period, 4u);
  ASSERT_EQ(steps.size(), 6u);
  EXPECT_EQ(steps[0].start_ns, 50);                // the warm-up kernel's end
  EXPECT_EQ(steps[1].start_ns, 5100 + 4 * 1100 - 100);  // the first step's last kernel's end
  EXPECT_EQ(steps[1].end_ns, steps[2].start_ns);
  EXPECT_EQ(steps[5].end_ns, trace.activities.back().end_ns);
  for (std::size_t i = 1; i < steps.size(); ++i) {
    const StepBreakdown b = break_down(trace, steps[i]);
    EXPECT_EQ(b.idle_before_ns, 100 + 5000) << i;
    EXPECT_EQ(b.idle_after_ns, 0) << i;
  }
  EXPECT_TRUE(steps_from_kernel_period(periodic_trace(2)).empty());  // repeats only twice
}

// The kernels after the last whole period (an evaluation's, a step cut
// short) are not a step.
TEST(ProfileSteps, APeriodLeftUnfinishedIsNoStep) {
  Trace trace = periodic_trace(6);
  const std::int64_t end = trace.activities.back().end_ns;
  trace.activities.push_back(kernel("embed", end + 5000, end + 6000));
  trace.activities.push_back(kernel(kGemm, end + 6100, end + 7100));
  const auto steps = steps_from_kernel_period(trace);
  ASSERT_EQ(steps.size(), 6u);
  EXPECT_EQ(steps[5].end_ns, end);  // where the GPU went idle before the unfinished one
}

// A period that repeats 96% of the second half is still the step's,
// although its mismatches are spread over it: the quick screen that spares
// the search a full count at every period must not turn it away, and a
// multiple of it that repeats as well, by chance a little better, must not
// be taken for the step.
TEST(ProfileSteps, AStepWithSomeVariedKernelsIsStillFound) {
  Trace trace;
  std::int64_t t = 0;
  constexpr int kPeriod = 25, kSteps = 400;
  std::uint32_t state = 12345;
  for (int s = 0; s < kSteps; ++s) {
    t += 5000;
    for (int k = 0; k < kPeriod; ++k) {
      state = state * 1664525u + 1013904223u;
      // 1 kernel in 50 is another (a different GEMM variant picked): 96% of
      // the names at a period's distance still agree.
      const bool varied = (state >> 24) % 50 == 0;
      trace.activities.push_back(kernel(varied ? "other" : "k" + std::to_string(k), t, t + 100));
      t += 150;
    }
  }
  std::size_t period = 0;
  EXPECT_FALSE(steps_from_kernel_period(trace, &period).empty());
  EXPECT_EQ(period, static_cast<std::size_t>(kPeriod));
}

// A transformer's step: the forward's layers, the loss, the backward's
// layers, the optimizer, six kernels a layer both ways. At the layer's
// period (6) 98% of the sequence repeats, failing only at the passes' and
// steps' boundaries; only the whole step (3 + 2 x 64 x 6 kernels) repeats
// everywhere.
TEST(ProfileSteps, TheStepNotALayerIsThePeriod) {
  Trace trace;
  std::int64_t t = 0;
  const auto launch = [&](const std::string& name) {
    trace.activities.push_back(kernel(name, t, t + 100));
    t += 150;
  };
  constexpr int kLayers = 64, kSteps = 6;
  for (int s = 0; s < kSteps; ++s) {
    t += 10000;
    launch("embed");
    for (int l = 0; l < kLayers; ++l)
      for (const char* name : {"norm_fwd", kGemm, "flash_fwd", kGemm, "swiglu_fwd", kGemm}) launch(name);
    launch("loss");
    for (int l = 0; l < kLayers; ++l)
      for (const char* name : {"flash_bwd", kGemm, kGemm, "norm_bwd", kGemm, "add"}) launch(name);
    launch("adam");
  }
  std::size_t period = 0;
  const auto steps = steps_from_kernel_period(trace, &period);
  EXPECT_EQ(period, 3u + 2 * kLayers * 6);
  ASSERT_EQ(steps.size(), static_cast<std::size_t>(kSteps));
  EXPECT_EQ(trace.activities[period].name, "embed");
  EXPECT_EQ(steps[1].start_ns, trace.activities[period - 1].end_ns);  // where the GPU went idle before "embed"
}

TEST(ProfileSteps, TheFirstWayThatFindsStepsWins) {
  Trace trace = periodic_trace(6);
  const std::regex pattern(kDefaultStepRange);
  EXPECT_CONTAINS(find_steps(trace, pattern, "step", {}).method, "repeating kernel sequence (4 kernels a step)");
  trace.activities.push_back(range("step", 0, 100000));
  EXPECT_CONTAINS(find_steps(trace, pattern, "step", {}).method, "NVTX ranges");
  const FoundSteps none = find_steps(Trace{}, pattern, "step", {});
  EXPECT_TRUE(none.steps.empty());
  EXPECT_CONTAINS(none.why_none, "does not repeat 3 times");
  const auto kept = steps_to_profile(std::vector<StepWindow>(5), 2, 2);
  EXPECT_EQ(kept.size(), 2u);
  EXPECT_TRUE(steps_to_profile(std::vector<StepWindow>(2), 2, 0).empty());
}

// Idle before the first record, between records and after the last; busy as
// the union over streams; NCCL's overlap with compute on another stream.
TEST(ProfileBreakdown, IdleSplitCategoriesAndOverlap) {
  Trace trace;
  trace.activities = {kernel(kGemm, 100, 400, 1),  kernel("rmsnorm_forward", 300, 500, 2), kernel(kNccl, 450, 700, 3),
                      copy(CopyKind::h2d, 800, 900, 1 << 20), kernel(kGemm, 1500, 1600, 1),
                      range("step", 0, 2000)};
  const StepBreakdown b = break_down(trace, {0, 2000});
  EXPECT_EQ(b.wall_ns, 2000);
  EXPECT_EQ(b.busy_ns, 600 + 100 + 100);  // [100,700), [800,900), [1500,1600)
  EXPECT_EQ(b.idle_before_ns, 100);
  EXPECT_EQ(b.idle_after_ns, 400);
  EXPECT_EQ(b.idle_between_ns, 100 + 600);
  EXPECT_EQ(b.idle_ns() + b.busy_ns, b.wall_ns);
  EXPECT_EQ(b.category_ns.at(Category::gemm), 400);
  EXPECT_EQ(b.category_ns.at(Category::elementwise), 200);
  EXPECT_EQ(b.category_ns.at(Category::memcpy_h2d), 100);
  EXPECT_EQ(b.nccl_ns, 250);
  EXPECT_EQ(b.nccl_overlap_ns, 50);  // the norm ran until 500
  // A window cuts records at its edges.
  const StepBreakdown half = break_down(trace, {350, 1000});
  EXPECT_EQ(half.category_ns.at(Category::gemm), 50);
  EXPECT_EQ(half.idle_before_ns, 0);
  const StepBreakdown empty = break_down(trace, {2000, 3000});
  EXPECT_EQ(empty.idle_before_ns, 1000);
}

// The one-pass breakdown of many steps is each step's own, also for a
// record that spans several steps and ones that start out of order.
TEST(ProfileBreakdown, AllStepsAtOnceAsEachAlone) {
  Trace trace = periodic_trace(6);
  trace.activities.push_back(kernel(kNccl, 3000, 30000, 2));  // across steps 0 to 2
  trace.activities.push_back(copy(CopyKind::h2d, 100, 200, 64));
  const auto steps = steps_from_kernel_period(trace);
  const std::vector<StepBreakdown> all = break_down_steps(trace, steps);
  ASSERT_EQ(all.size(), steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const StepBreakdown alone = break_down(trace, steps[i]);
    EXPECT_EQ(all[i].busy_ns, alone.busy_ns) << i;
    EXPECT_EQ(all[i].idle_before_ns, alone.idle_before_ns) << i;
    EXPECT_EQ(all[i].nccl_overlap_ns, alone.nccl_overlap_ns) << i;
    EXPECT_EQ(all[i].category_ns, alone.category_ns) << i;
  }
  EXPECT_GT(all[1].nccl_ns, 0);
  EXPECT_EQ(step_at(steps, steps[2].start_ns), std::optional<std::size_t>(2));
  EXPECT_EQ(step_at(steps, steps[0].start_ns - 1), std::nullopt);
  EXPECT_EQ(step_at(steps, steps.back().end_ns), std::nullopt);
}

TEST(ProfileBreakdown, TopKernelsByTotalTime) {
  const Trace trace = periodic_trace(6);
  const auto steps = steps_from_kernel_period(trace);
  const auto top = top_kernels(trace, steps, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].name, kGemm);
  EXPECT_EQ(top[0].count, 12);
  EXPECT_EQ(top[0].total_ns, 12000);
  EXPECT_DOUBLE_EQ(top[0].mean_ns(), 1000);
  EXPECT_EQ(top[0].category, Category::gemm);
}

// A kernel across a step boundary is one call, its time split between the
// two steps: counted once in each, its mean call read half its length.
TEST(ProfileBreakdown, AKernelAcrossAStepBoundaryIsOneCall) {
  Trace trace;
  trace.activities = {kernel("relu", 900, 1100)};
  const std::vector<StepWindow> steps = {{0, 1000}, {1000, 2000}};
  const auto top = top_kernels(trace, steps, 1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].count, 1);
  EXPECT_EQ(top[0].total_ns, 200);
  EXPECT_DOUBLE_EQ(top[0].mean_ns(), 200);
}

RunResults measured_ceilings() {
  RunResults run;
  run.source = "results/references/H200";
  ResultRow mamf;
  mamf.params = {{"result", "mamf"}, {"dtype", "bf16"}};
  mamf.metrics = {{"tflops", 700}};
  ResultRow shape = mamf;
  shape.params = {{"dtype", "bf16"}, {"m", "4096"}};  // a shape row, not the MAMF
  shape.metrics = {{"tflops", 750}};
  ResultRow hbm;
  hbm.metrics = {{"hbm_GBps", 4000}};
  ResultRow d2h;
  d2h.params = {{"stage", "gpu.d2h"}, {"memory", "pinned"}};
  d2h.metrics = {{"GBps", 50}};
  run.rows = {mamf, shape, hbm, d2h};
  // all_reduce over ranks not recorded (no JSON beside the rows' file):
  // 100 GB/s algbw at 1 MB, 200 at 4 MB; the best of two rows at 4 MB, and
  // neither a failed row, a --split group's nor a per-rank row counts.
  const auto collective_row = [](const char* bytes, double algbw) {
    ResultRow row;
    row.file = "no/such/allreduce.csv";
    row.params = {{"collective", "all_reduce"}, {"bytes", bytes}};
    row.metrics = {{"algbw_GBps", algbw}, {"busbw_GBps", algbw * 1.75}};
    return row;
  };
  run.rows.push_back(collective_row("1048576", 100));
  run.rows.push_back(collective_row("4194304", 150));
  run.rows.push_back(collective_row("4194304", 200));
  ResultRow failed = collective_row("4194304", 9000);
  failed.status = RowStatus::error;
  ResultRow group = collective_row("4194304", 9000);
  group.params["group"] = "0";
  ResultRow rank = collective_row("4194304", 9000);
  rank.params["rank"] = "3";
  run.rows.insert(run.rows.end(), {failed, group, rank});
  return run;
}

// A ceiling of 0 (or below, or not finite) measured nothing: it is no
// ceiling, where it would have printed "inf%" of it.
TEST(ProfileCeilings, ZeroOrNonFiniteCeilingsAreNotCeilings) {
  RunResults run;
  ResultRow mamf;
  mamf.params = {{"dtype", "fp8"}, {"result", "mamf"}};
  mamf.metrics = {{"tflops", 0}};
  ResultRow hbm;
  hbm.metrics = {{"hbm_GBps", 0}};
  ResultRow d2h;
  d2h.params = {{"stage", "gpu.d2h"}, {"memory", "pinned"}};
  d2h.metrics = {{"GBps", -1}};
  run.rows = {mamf, hbm, d2h};
  const Ceilings c = ceilings_from(run);
  EXPECT_EQ(c.mamf_tflops.count("fp8"), 0u);
  EXPECT_FALSE(c.hbm_GBps);
  EXPECT_FALSE(c.d2h_GBps);
}

TEST(ProfileCeilings, ReadByWhatTheRowsHold) {
  const Ceilings c = ceilings_from(measured_ceilings());
  EXPECT_EQ(c.mamf_tflops.at("bf16"), 700);
  EXPECT_EQ(*c.hbm_GBps, 4000);
  EXPECT_EQ(*c.d2h_GBps, 50);
  EXPECT_FALSE(c.h2d_GBps);
  ASSERT_EQ(c.collective_curves.size(), 1u);
  const CollectiveCurve& curve = c.collective_curves[0];
  EXPECT_EQ(curve.collective, "all_reduce");
  EXPECT_EQ(curve.ranks, 0);
  ASSERT_EQ(curve.algbw_GBps.size(), 2u);
  EXPECT_EQ(curve.algbw_GBps[0].size, 1048576);
  EXPECT_EQ(curve.algbw_GBps[0].throughput, 100);
  EXPECT_EQ(curve.algbw_GBps[1].throughput, 200);
}

class ProfileCeilingsFolder : public redline::testing::TempDirTest {};

// A suite run's allreduce_bench report as the tool writes it: its curve is
// over the ranks its JSON summary recorded.
TEST_F(ProfileCeilingsFolder, CollectiveCurvesCarryTheirRunsRanks) {
  Report report;
  report.tool = "allreduce_bench";
  for (const auto& [bytes, algbw] : {std::pair{"1024", 2.0}, {"1048576", 90.0}}) {
    Row row;
    row.param("collective", "all_gather").param("bytes", bytes).metric("algbw_GBps", algbw).metric("busbw_GBps", algbw);
    report.rows.push_back(row);
  }
  report.summary.emplace_back("ranks", "8 (8 processes x 1 local)");
  write_reports(report, {.csv_path = (dir_ / "ag.csv").string(), .json_path = (dir_ / "ag.json").string(), .quiet = true});
  const Ceilings c = ceilings_from(load_results(dir_));
  ASSERT_EQ(c.collective_curves.size(), 1u);
  EXPECT_EQ(c.collective_curves[0].collective, "all_gather");
  EXPECT_EQ(c.collective_curves[0].ranks, 8);
  EXPECT_EQ(c.collective_curves[0].algbw_GBps.size(), 2u);
}

// One step of 10 ms: 5 ms of GEMMs that do 1.75 TFLOP (350 TFLOPS, half the
// 700 TFLOPS MAMF: 2.5 ms beyond it), 1 ms D2H copying 25 MB (25 GB/s of
// 50), idle 4 ms, 3 of them between records.
Trace one_step_trace() {
  Trace trace;
  const std::int64_t ms = 1000000;
  trace.activities = {kernel(kGemm, 1 * ms / 2, 3 * ms), kernel(kGemm, 4 * ms, 6 * ms + ms / 2),
                      copy(CopyKind::d2h, 8 * ms + ms / 2, 9 * ms + ms / 2, 25000000), range("step", 0, 10 * ms)};
  trace.gemms = {{.time_ns = 1, .m = 1000, .n = 1000, .k = 875000, .batch = 1, .dtype = "bf16"}};
  return trace;
}

TEST(ProfileCeilings, EachCategoryAgainstItsCeiling) {
  const Trace trace = one_step_trace();
  const ProfileTotals totals = total_over(trace, {{0, 10000000}});
  const auto findings = ceiling_findings(totals, ceilings_from(measured_ceilings()));
  ASSERT_EQ(findings.size(), 3u);
  EXPECT_CONTAINS(findings[0].text, "GEMMs run at 50% of this GPU's measured bf16 MAMF (350.0 of 700.0 TFLOPS");
  EXPECT_NEAR(findings[0].excess_ns, 2.5e6, 1);
  EXPECT_CONTAINS(findings[1].text, "memcpy_d2h: 1.00 ms a step at 25.0 GB/s, 50% of the measured pinned D2H");
  EXPECT_NEAR(findings[1].excess_ns, 0.5e6, 1);
  EXPECT_CONTAINS(findings[2].text, "the GPU is idle 40% of the step, mostly between kernels (launch-bound");
  EXPECT_NEAR(findings[2].excess_ns, 4e6, 1);
  EXPECT_CONTAINS(*largest_gap(findings), "idle 40%");
}

// Never a guessed FLOP count: without the GEMMs' shapes, or without NCCL's
// message sizes, the finding says what is missing.
// Steps of no length say so, rather than that the GPU was busy all along.
TEST(ProfileCeilings, StepsOfNoLengthHaveNoIdleFinding) {
  ProfileTotals t;
  t.steps = 2;
  EXPECT_CONTAINS(idle_finding(t).text, "the steps have no length");
  t.sum.wall_ns = t.sum.busy_ns = 1000;
  EXPECT_CONTAINS(idle_finding(t).text, "busy the whole step");
}

TEST(ProfileCeilings, UnknownShapesAreSaidSo) {
  Trace trace = one_step_trace();
  trace.gemms.clear();
  trace.activities.push_back(kernel(kNccl, 8 * 1000000, 9 * 1000000));
  const auto findings = ceiling_findings(total_over(trace, {{0, 10000000}}), ceilings_from(measured_ceilings()));
  EXPECT_CONTAINS(findings[0].text, "the GEMM shapes are unknown (the trace records no cuBLAS calls; --gemm-shapes");
  EXPECT_EQ(findings[0].excess_ns, 0);
  trace.gemm_calls_recorded = true;
  EXPECT_CONTAINS(ceiling_findings(total_over(trace, {{0, 10000000}}), ceilings_from(measured_ceilings()))[0].text,
                  "the GEMM shapes are unknown (no recorded cuBLAS call's kernel ran in the profiled steps)");
  EXPECT_CONTAINS(findings[1].text, "NCCL: 1.00 ms a step, 0% of it overlapped with compute; the message sizes are unknown");
  EXPECT_CONTAINS(findings[1].text, "--nccl-sizes records them");
  EXPECT_EQ(findings[1].excess_ns, 0);
  trace.nccl_calls_recorded = true;
  EXPECT_CONTAINS(ceiling_findings(total_over(trace, {{0, 10000000}}), ceilings_from(measured_ceilings()))[1].text,
                  "no recorded NCCL call's kernel ran in the profiled steps");
  const auto no_ceiling = ceiling_findings(total_over(one_step_trace(), {{0, 10000000}}), Ceilings{});
  EXPECT_CONTAINS(no_ceiling[0].text, "no measured bf16 MAMF");
}

// Joined calls are what the step's GEMM FLOPs come from, each in the step
// its kernel ran in.
TEST(ProfileGemmCalls, JoinedCallsCountInTheirKernelsStep) {
  Trace trace = one_step_trace();
  trace.gemms.clear();
  Trace calls;
  calls.gemm_calls = {{.external_id = 1, .m = 1000, .n = 1000, .k = 875000, .batch = 1, .dtype = "bf16"},
                      {.external_id = 2, .m = 1000, .n = 1000, .k = 875000, .batch = 1, .dtype = "bf16"}};
  trace.external_correlations = {{.correlation_id = 5, .external_id = 1}, {.correlation_id = 6, .external_id = 2}};
  trace.kernel_correlations = {{.correlation_id = 5, .start_ns = 500000}, {.correlation_id = 6, .start_ns = 20000000}};
  trace.gemms = gemm_calls(calls, trace).gemms;
  trace.gemm_calls_recorded = true;
  const ProfileTotals totals = total_over(trace, {{0, 10000000}});
  ASSERT_EQ(totals.gemm_flop.size(), 1u);
  EXPECT_DOUBLE_EQ(totals.gemm_flop.at("bf16"), 2.0 * 1000 * 1000 * 875000);  // the second ran after the step
  EXPECT_CONTAINS(ceiling_findings(totals, ceilings_from(measured_ceilings()))[0].text,
                  "GEMMs run at 50% of this GPU's measured bf16 MAMF");
}

// One 10 ms step whose all-reduce kernels run 1 ms against compute for
// half of it. At the measured 100 GB/s at 1 MiB and 200 GB/s at 4 MiB
// (150 GB/s at 2 MiB, linear in log2(bytes)):
//   a group of two 1 MiB all-reduces: 2 x 1048576 / 100 = 20971.52 ns,
//   one 2 MiB all-reduce: 2097152 / 150 = 13981.01 ns,
// against their kernels' 0.6 ms and 0.4 ms. A launch after the step, one
// of a collective the ceilings lack, and one outside the measured sizes
// are not compared, and the finding says why.
TEST(ProfileCeilings, NcclAgainstTheBandwidthMeasuredForItsSizes) {
  const std::int64_t ms = 1000000;
  Trace trace;
  trace.activities = {kernel(kGemm, 0, 9 * ms / 2, 7), kernel(kNccl, 4 * ms, 5 * ms, 9), range("step", 0, 10 * ms)};
  const auto call = [](const char* collective, std::int64_t count) {
    return NcclCallRecord{.external_id = 0, .collective = collective, .count = count, .element_bytes = 2, .ranks = 4};
  };
  const std::int64_t mib_of_bf16 = 1048576 / 2;
  trace.nccl_calls_recorded = true;
  trace.nccl_launches = {
      {.time_ns = 4 * ms, .kernel_ns = 6 * ms / 10, .calls = {call("all_reduce", mib_of_bf16), call("all_reduce", mib_of_bf16)}},
      {.time_ns = 4 * ms + 6 * ms / 10, .kernel_ns = 4 * ms / 10, .calls = {call("all_reduce", 2 * mib_of_bf16)}},
      {.time_ns = 11 * ms, .kernel_ns = ms, .calls = {call("all_reduce", mib_of_bf16)}},
      {.time_ns = 5 * ms, .kernel_ns = 1, .calls = {call("all_gather", 16)}},
      {.time_ns = 5 * ms, .kernel_ns = 1, .calls = {call("all_reduce", 16)}}};
  const ProfileTotals totals = total_over(trace, {{0, 10 * ms}});
  const auto findings = ceiling_findings(totals, ceilings_from(measured_ceilings()));
  ASSERT_GE(findings.size(), 2u);
  const CeilingFinding& nccl = findings[1];
  const double floor_ns = 2 * 1048576 / 100.0 + 2097152 / 150.0;
  EXPECT_CONTAINS(nccl.text, "NCCL: 1.00 ms a step, 50% of it overlapped with compute");
  EXPECT_CONTAINS(nccl.text, "its collectives ran at " + format_percent(floor_ns / ms, 0) +
                                 " of the bandwidth measured for the same collectives and sizes (1.00 ms a step "
                                 "where the measured algbw gives 0.03 ms; 2 of 4 launches compared");
  EXPECT_CONTAINS(nccl.text, "1 not compared: all_gather over 4 ranks: not measured in the ceilings");
  EXPECT_CONTAINS(nccl.text, "1 not compared: all_reduce messages outside the sizes measured (1M to 4M)");
  EXPECT_NEAR(nccl.excess_ns, (ms - floor_ns) * 0.5, 1);  // the exposed half only
}

TEST(ProfileReport, RowsPerStepAndCategory) {
  const Trace trace = periodic_trace(6);
  Report report;
  report.tool = "redline_profile";
  ProfileInput input{.trace = trace, .found = find_steps(trace, std::regex(kDefaultStepRange), "step", {}), .skip = 1, .limit = 3};
  add_profile(report, input);
  // Three steps, each a step row and rows for gemm, attention (the softmax)
  // and elementwise (the embedding).
  ASSERT_EQ(report.rows.size(), 12u);
  EXPECT_EQ(report.rows[0].param_value("step"), "1");
  EXPECT_EQ(report.rows[0].param_value("category"), "step");
  EXPECT_NEAR(*report.rows[0].metric_value("wall_ms"), (4 * 1100 + 5000) / 1e6, 1e-9);
  EXPECT_EQ(report.rows[1].param_value("category"), "gemm");
  EXPECT_NEAR(*report.rows[1].metric_value("time_ms"), 2000 / 1e6, 1e-12);
  ProfileInput skipped_all = input;
  skipped_all.skip = 6;
  EXPECT_THROW_WITH(add_profile(report, skipped_all), UsageError,
                    "--skip '6': skips all 6 steps found (by the repeating kernel sequence");
  ProfileInput none{.trace = Trace{}, .found = find_steps(Trace{}, std::regex("step"), "step", {})};
  EXPECT_THROW_WITH(add_profile(report, none), std::runtime_error, "no steps found");
}

// A profiled trial: its steps after the first, busy and idle over them, the
// category with the most time; on the row as metrics and in the note.
TEST(ProfileTrial, BusyIdleAndTheTopCategory) {
  const auto p = profile_trial(periodic_trace(6), 1);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->steps, 5u);
  // A step, the last too: the host's 5000 ns, then 4 kernels of 1000 ns
  // 1100 ns apart (4 x 1100 - 100 ns).
  const double wall = 5 * 9400;
  EXPECT_NEAR(p->busy_pct, 100.0 * 5 * 4000 / wall, 1e-9);
  EXPECT_NEAR(p->idle_pct, 100 - p->busy_pct, 1e-9);
  EXPECT_EQ(p->top_category, "gemm");
  EXPECT_NEAR(p->top_pct, 100.0 * 5 * 2000 / wall, 1e-9);
  EXPECT_FALSE(profile_trial(periodic_trace(6), 6));
  Row row;
  add_trial_profile(row, p, "");
  EXPECT_NEAR(*row.metric_value("gpu_idle_pct"), p->idle_pct, 1e-12);
  EXPECT_CONTAINS(row.note, "top: gemm 21% (5 steps profiled)");
  Row unprofiled;
  add_trial_profile(unprofiled, std::nullopt, "the trial wrote no trace");
  EXPECT_FALSE(unprofiled.metric_value("gpu_idle_pct"));
  EXPECT_EQ(unprofiled.note, "not profiled: the trial wrote no trace");
}

TEST(ProfileTrial, WhySaturationIsWhereItIs) {
  std::vector<Row> rows;
  for (const auto& [batch, idle] : std::vector<std::pair<int, double>>{{1, 60}, {2, 48}, {4, 35}, {8, 8}, {16, 4}}) {
    Row row;
    row.param("batch_size", std::to_string(batch)).metric("gpu_idle_pct", idle);
    rows.push_back(row);
  }
  Row failed;
  failed.param("batch_size", "32").metric("gpu_idle_pct", 99);
  failed.status = RowStatus::oom;
  rows.push_back(failed);
  EXPECT_EQ(idle_around_saturation(rows, 8), "below batch 8 the GPU is idle 35-60% of the step; from 8 on 4-8%");
  EXPECT_FALSE(idle_around_saturation(rows, 1));  // nothing below
}

}  // namespace

// A process driving four GPUs, each busy a quarter of the step: one GPU's
// records are the profile (the busiest, else --device's), not their union,
// which would read busy the whole step. Its kernel correlations go with it.
TEST(ProfileDevices, OneGpuAProfile) {
  Trace trace;
  for (int d = 0; d < 4; ++d) {
    Activity k = kernel(kGemm, d * 250, (d + 1) * 250 - (d == 2 ? 0 : 10));
    k.device = d;
    trace.activities.push_back(k);
    trace.kernel_correlations.push_back({100 + d, k.start_ns, k.end_ns, d});
  }
  trace.activities.push_back(range("step", 0, 1000));
  Trace busiest = trace;
  const auto line = keep_one_device(busiest, std::nullopt);
  ASSERT_TRUE(line);
  EXPECT_CONTAINS(*line, "devices 0, 1, 2, 3; this profile is device 2's (the most GPU time");
  EXPECT_EQ(break_down(busiest, {0, 1000}).busy_ns, 250);
  ASSERT_EQ(busiest.kernel_correlations.size(), 1u);
  EXPECT_EQ(busiest.kernel_correlations[0].correlation_id, 102);
  EXPECT_EQ(busiest.activities.size(), 2u);  // its kernel and the host's range
  Trace asked = trace;
  EXPECT_CONTAINS(*keep_one_device(asked, 1), "device 1's (--device)");
  EXPECT_EQ(break_down(asked, {0, 1000}).busy_ns, 240);
  Trace none = trace;
  EXPECT_THROW_WITH(keep_one_device(none, 7), UsageError, "--device '7': ran nothing in the trace (devices: 0, 1, 2, 3)");
  Trace one;
  one.activities = {kernel(kGemm, 0, 10)};
  EXPECT_FALSE(keep_one_device(one, std::nullopt));
  // The device travels with a kernel correlation; an older trace's line
  // without it is device 0's.
  const Trace back = parse_trace(trace_header() + kernel_correlation_line({5, 10, 20, 3}) + "kernelcorr\t6\t30\t40\n", "t");
  ASSERT_EQ(back.kernel_correlations.size(), 2u);
  EXPECT_EQ(back.kernel_correlations[0].device, 3);
  EXPECT_EQ(back.kernel_correlations[1].device, 0);
}
