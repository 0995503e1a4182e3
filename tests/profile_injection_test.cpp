// The profiler's injection library without a GPU: CUPTI's records read into
// activities (hand-made records), and the library's lifecycle in a program
// (profile_injection_child) against a stand-in libcupti (fake_cupti.cpp):
// the trace it writes, the flush at exit and on a signal, a program's own
// handler, forked children, a kind CUPTI refuses and the environment.
// CUPTI itself, on a GPU, is scripts/gpu-check's.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/core/child_process.hpp"
#include "harness/profile/gemm_calls.hpp"
#include "harness/profile/trace_file.hpp"
#include "kernels/profile/activity_records.hpp"
#include "tests/support.hpp"

using namespace redline;
using namespace redline::profile;
namespace fs = std::filesystem;

namespace {

CUpti_ActivityKernel10 kernel_record(std::uint64_t start, std::uint64_t end, const char* name) {
  CUpti_ActivityKernel10 k = {};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.deviceId = 1;
  k.streamId = 13;
  k.name = name;
  return k;
}

CUpti_ActivityMarker2 marker_record(CUpti_ActivityFlag flag, std::uint32_t id, std::uint64_t at,
                                    const char* name = nullptr, const char* domain = nullptr) {
  CUpti_ActivityMarker2 m = {};
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = flag;
  m.id = id;
  m.timestamp = at;
  m.name = name;
  m.domain = domain;
  return m;
}

template <typename Record>
std::vector<Activity> read_one(RecordReader& reader, const Record& record) {
  std::vector<Activity> out;
  reader.read(reinterpret_cast<const CUpti_Activity&>(record), out);
  return out;
}

}  // namespace

TEST(ActivityRecords, KernelKeepsItsTimesDeviceAndStreamAndIsDemangled) {
  RecordReader reader;
  for (int twice = 0; twice < 2; ++twice) {  // the second from the name cache
    const auto out = read_one(reader, kernel_record(1000, 2500, "_Z6squarePfi"));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].kind, ActivityKind::kernel);
    EXPECT_EQ(out[0].start_ns, 1000);
    EXPECT_EQ(out[0].end_ns, 2500);
    EXPECT_EQ(out[0].device, 1);
    EXPECT_EQ(out[0].stream, 13u);
    EXPECT_EQ(out[0].name, "square(float*, int)");
  }
  EXPECT_EQ(read_one(reader, kernel_record(1, 2, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"))[0].name,
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
}

TEST(ActivityRecords, UntimedRecordsAreLeftOutAndCounted) {
  RecordReader reader;
  EXPECT_TRUE(read_one(reader, kernel_record(0, 0, "k")).empty());
  EXPECT_TRUE(read_one(reader, kernel_record(5, 0, "k")).empty());
  EXPECT_TRUE(read_one(reader, marker_record(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 0, "step")).empty());
  EXPECT_EQ(reader.untimed(), 3);
}

TEST(ActivityRecords, CopiesAndMemsets) {
  RecordReader reader;
  CUpti_ActivityMemcpy6 copy = {};
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  copy.bytes = 1 << 20;
  copy.start = 10;
  copy.end = 30;
  copy.streamId = 3;
  const auto copied = read_one(reader, copy);
  ASSERT_EQ(copied.size(), 1u);
  EXPECT_EQ(copied[0].kind, ActivityKind::memcpy);
  EXPECT_EQ(copied[0].copy, CopyKind::d2h);
  EXPECT_EQ(copied[0].bytes, 1 << 20);
  EXPECT_EQ(copied[0].stream, 3u);

  CUpti_ActivityMemset4 set = {};
  set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  set.bytes = 64;
  set.start = 40;
  set.end = 41;
  const auto cleared = read_one(reader, set);
  ASSERT_EQ(cleared.size(), 1u);
  EXPECT_EQ(cleared[0].kind, ActivityKind::memset);
  EXPECT_EQ(cleared[0].bytes, 64);
}

// cudaMemcpyPeer and other copies between GPUs come as their own kind.
TEST(ActivityRecords, PeerToPeerCopiesAreCopiesBetweenDevices) {
  RecordReader reader;
  CUpti_ActivityMemcpyPtoP4 copy = {};
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  copy.bytes = 1 << 16;
  copy.start = 50;
  copy.end = 80;
  copy.deviceId = 1;
  copy.streamId = 9;
  const auto copied = read_one(reader, copy);
  ASSERT_EQ(copied.size(), 1u);
  EXPECT_EQ(copied[0].kind, ActivityKind::memcpy);
  EXPECT_EQ(copied[0].copy, CopyKind::other);
  EXPECT_EQ(copied[0].bytes, 1 << 16);
  EXPECT_EQ(copied[0].start_ns, 50);
  EXPECT_EQ(copied[0].end_ns, 80);
  EXPECT_EQ(copied[0].device, 1);
  EXPECT_EQ(copied[0].stream, 9u);
}

TEST(ActivityRecords, CopyKindsByWhereTheBytesLive) {
  EXPECT_EQ(copy_kind(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD), CopyKind::h2d);
  EXPECT_EQ(copy_kind(CUPTI_ACTIVITY_MEMCPY_KIND_HTOA), CopyKind::h2d);
  EXPECT_EQ(copy_kind(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH), CopyKind::d2h);
  EXPECT_EQ(copy_kind(CUPTI_ACTIVITY_MEMCPY_KIND_ATOH), CopyKind::d2h);
  EXPECT_EQ(copy_kind(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD), CopyKind::d2d);
  EXPECT_EQ(copy_kind(CUPTI_ACTIVITY_MEMCPY_KIND_ATOD), CopyKind::d2d);
  EXPECT_EQ(copy_kind(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP), CopyKind::other);
  EXPECT_EQ(copy_kind(CUPTI_ACTIVITY_MEMCPY_KIND_HTOH), CopyKind::other);
  EXPECT_EQ(copy_kind(CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN), CopyKind::other);
}

TEST(ActivityRecords, MarkersPairByIdInEitherOrder) {
  RecordReader reader;
  EXPECT_TRUE(read_one(reader, marker_record(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 100, "step 1")).empty());
  EXPECT_TRUE(read_one(reader, marker_record(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, 900)).empty());
  EXPECT_EQ(reader.open_ranges(), 1);  // an end alone is no open range
  const auto first = read_one(reader, marker_record(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 500));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].kind, ActivityKind::range);
  EXPECT_EQ(first[0].start_ns, 100);
  EXPECT_EQ(first[0].end_ns, 500);
  EXPECT_EQ(first[0].name, "step 1");
  // Ended on another thread, its end came first.
  const auto second = read_one(reader, marker_record(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, 600, "forward"));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].start_ns, 600);
  EXPECT_EQ(second[0].end_ns, 900);
  EXPECT_EQ(second[0].name, "forward");
  EXPECT_EQ(reader.open_ranges(), 0);
}

TEST(ActivityRecords, LibraryDomainsAreNamedAndMarksAreNoRanges) {
  RecordReader reader;
  read_one(reader, marker_record(CUPTI_ACTIVITY_FLAG_MARKER_START, 5, 10, "ncclAllReduce", "NCCL"));
  const auto out = read_one(reader, marker_record(CUPTI_ACTIVITY_FLAG_MARKER_END, 5, 20));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name, "NCCL: ncclAllReduce");
  EXPECT_TRUE(read_one(reader, marker_record(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 6, 30, "mark")).empty());
  EXPECT_EQ(reader.open_ranges(), 0);
}

namespace {

// One run of the child in a fresh folder; the trace is `trace` there.
struct ChildRun {
  fs::path dir;
  ChildResult result;
  fs::path trace() const { return dir / "trace"; }
  std::vector<fs::path> files() const {
    std::vector<fs::path> found{fs::directory_iterator(dir), fs::directory_iterator()};
    std::sort(found.begin(), found.end());
    return found;
  }
};

ChildRun run_child_mode(const std::string& mode, std::vector<std::pair<std::string, std::string>> env,
                   const std::string& out_name = "trace") {
  ChildRun run;
  run.dir = fs::path(::testing::TempDir()) / ("profile_injection_" + mode + "_" + std::to_string(::getpid()));
  fs::remove_all(run.dir);
  fs::create_directories(run.dir);
  if (!out_name.empty()) env.emplace_back("REDLINE_PROFILE_OUT", (run.dir / out_name).string());
  ChildSpec spec;
  spec.argv = {PROFILE_INJECTION_CHILD, mode, FAKE_CUPTI, INJECTION_LIBRARY};
  spec.extra_env = std::move(env);
  spec.timeout_seconds = 60;
  run.result = run_child(spec);
  return run;
}

const std::vector<std::pair<std::string, std::string>> kNvtxOk = {{"NVTX_INJECTION64_PATH", FAKE_CUPTI}};

bool has_problem(const Trace& trace, const std::string& part) {
  return std::any_of(trace.problems.begin(), trace.problems.end(),
                     [&](const std::string& p) { return p.find(part) != std::string::npos; });
}

// What the stand-in hands out, as the trace must hold it once finished:
// the held buffer's markers close two ranges, one range stays open.
void expect_whole_trace(const Trace& trace) {
  std::vector<std::string> ranges;
  int device_records = 0;
  for (const Activity& a : trace.activities) {
    if (a.kind == ActivityKind::range) ranges.push_back(a.name);
    else ++device_records;
  }
  EXPECT_EQ(device_records, 4);  // two kernels (one untimed left out), a copy, a memset
  EXPECT_EQ(ranges, (std::vector<std::string>{"step 1", "NCCL: ncclAllReduce"}));
  EXPECT_EQ(trace.dropped, 7 + 1);  // CUPTI's 7 and the untimed kernel
  EXPECT_TRUE(trace.has_clock);
  EXPECT_TRUE(has_problem(trace, "1 activity records had no timestamps"));
  EXPECT_TRUE(has_problem(trace, "1 NVTX ranges still open"));
  EXPECT_FALSE(has_problem(trace, "NVTX_INJECTION64_PATH"));
  EXPECT_TRUE(trace.ended);
  EXPECT_GT(trace.process_id, 0);
}

// The launcher's clock, which the trace's clock line pairs with CUPTI's.
std::int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST(ProfileInjection, WritesTheWholeTraceAtExit) {
  const ChildRun run = run_child_mode("exit", kNvtxOk);
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end() << "\n" << run.result.output;
  EXPECT_CONTAINS(run.result.output, "InitializeInjection 1");
  const Trace trace = read_trace(run.trace());
  expect_whole_trace(trace);
  EXPECT_EQ(trace.problems.size(), 2u);  // the untimed kernel and the open range
  const std::vector<Activity>& a = trace.activities;
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a[0].name, "square(float*, int)");
  // CUPTI reads the library's clock, the launcher's: the pairing is exact
  // but for the time between two reads.
  EXPECT_LT(std::llabs(trace.clock_offset_ns), 1000000000);
  EXPECT_FALSE(has_problem(trace, "cuptiActivityRegisterTimestampCallback"));
}

// Refused, the records stay on CUPTI's own clock (the stand-in's fixed
// reading), and the clock line still says how far it is from the monotonic.
TEST(ProfileInjection, ARefusedClockIsAProblemAndStillPaired) {
  auto env = kNvtxOk;
  env.emplace_back("FAKE_CUPTI_REFUSE", "TIMESTAMP_CALLBACK");
  const std::int64_t before = monotonic_ns();
  const ChildRun run = run_child_mode("exit", env);
  const std::int64_t after = monotonic_ns();
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end();
  const Trace trace = read_trace(run.trace());
  expect_whole_trace(trace);
  EXPECT_TRUE(
      has_problem(trace, "cuptiActivityRegisterTimestampCallback(CLOCK_MONOTONIC): CUPTI_ERROR_NOT_COMPATIBLE"));
  const std::int64_t paired_monotonic_ns = trace.clock_offset_ns + 123456789;
  EXPECT_GE(paired_monotonic_ns, before);
  EXPECT_LE(paired_monotonic_ns, after);
}

// Work still running at the end comes back untimed in the forced flush: it
// is dropped with its own cause, not taken for full device buffers.
TEST(ProfileInjection, RecordsStillInFlightAtTheEndAreSaidSo) {
  auto env = kNvtxOk;
  env.emplace_back("FAKE_CUPTI_IN_FLIGHT", "1");
  const ChildRun run = run_child_mode("exit", env);
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end();
  const Trace trace = read_trace(run.trace());
  EXPECT_EQ(trace.dropped, 7 + 1 + 1);
  EXPECT_TRUE(has_problem(trace, "1 activity records had no timestamps (CUPTI's device buffers were full)"));
  EXPECT_TRUE(has_problem(trace, "1 activity records were still incomplete at the end"));
  EXPECT_TRUE(trace.ended);
}

// A program that leaves without atexit (_exit, SIGKILL, a crash) keeps what
// the periodic flush wrote, and its trace has no end line.
TEST(ProfileInjection, APeriodicFlushKeepsTheRecordsOfAProgramThatSkipsAtexit) {
  const ChildRun run = run_child_mode("exit_without_atexit", kNvtxOk);
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end();
  const Trace trace = read_trace(run.trace());
  std::vector<std::string> ranges;
  for (const Activity& a : trace.activities)
    if (a.kind == ActivityKind::range) ranges.push_back(a.name);
  EXPECT_EQ(ranges, (std::vector<std::string>{"step 1", "NCCL: ncclAllReduce"}));  // the held buffer's ends
  EXPECT_FALSE(trace.ended);
}

TEST(ProfileInjection, SigtermFlushesThenEndsTheProgramBySignal) {
  const ChildRun run = run_child_mode("sigterm", kNvtxOk);
  EXPECT_EQ(run.result.term_signal, SIGTERM) << run.result.describe_end();
  expect_whole_trace(read_trace(run.trace()));
}

TEST(ProfileInjection, AProgramsOwnHandlerStillRunsAndExitFinishes) {
  const ChildRun run = run_child_mode("sigint_handled", kNvtxOk);
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end();
  EXPECT_CONTAINS(run.result.output, "handled 1");
  expect_whole_trace(read_trace(run.trace()));
}

TEST(ProfileInjection, AnIgnoredSignalStaysIgnored) {
  const ChildRun run = run_child_mode("sigterm_ignored", kNvtxOk);
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end();
  expect_whole_trace(read_trace(run.trace()));
}

TEST(ProfileInjection, ForkedChildrenWriteNothing) {
  const ChildRun run = run_child_mode("fork", kNvtxOk);
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end();
  EXPECT_CONTAINS(run.result.output, "child exited");
  EXPECT_CONTAINS(run.result.output, "child killed by a signal");
  EXPECT_EQ(run.files().size(), 1u);
  expect_whole_trace(read_trace(run.trace()));
}

TEST(ProfileInjection, EachProcessGetsItsOwnFileThroughPercentP) {
  const ChildRun run = run_child_mode("exit", kNvtxOk, "trace.%p");
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end();
  const auto files = run.files();
  ASSERT_EQ(files.size(), 1u);
  const std::string name = files[0].filename().string();
  EXPECT_NE(name, "trace.%p");
  EXPECT_EQ(name.rfind("trace.", 0), 0u);
  EXPECT_EQ(name.find_first_not_of("0123456789", 6), std::string::npos) << name;
}

TEST(ProfileInjection, ATraceInUseByAnotherProcessIsLeftAlone) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("profile_injection_busy_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path trace = dir / "trace";
  const int fd = ::open(trace.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "theirs\n", 7), 7);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);  // as a traced process holds it
  ChildSpec spec;
  spec.argv = {PROFILE_INJECTION_CHILD, "exit", FAKE_CUPTI, INJECTION_LIBRARY};
  spec.extra_env = {{"REDLINE_PROFILE_OUT", trace.string()}, {"NVTX_INJECTION64_PATH", FAKE_CUPTI}};
  const ChildResult result = run_child(spec);
  ::close(fd);
  ASSERT_TRUE(result.succeeded()) << result.describe_end();
  EXPECT_CONTAINS(result.output, "is not traced");
  EXPECT_EQ(fs::file_size(trace), 7u);
}

TEST(ProfileInjection, WithoutAnOutputPathNothingIsTracedOrWritten) {
  const ChildRun run = run_child_mode("exit", kNvtxOk, "");
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end();
  EXPECT_TRUE(run.files().empty());
}

TEST(ProfileInjection, ARefusedKindIsAProblemAndTheRestIsTraced) {
  auto env = kNvtxOk;
  env.emplace_back("FAKE_CUPTI_REFUSE", "MEMSET");
  const ChildRun run = run_child_mode("exit", env);
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end();
  const Trace trace = read_trace(run.trace());
  EXPECT_TRUE(has_problem(trace, "cuptiActivityEnable(MEMSET): CUPTI_ERROR_NOT_COMPATIBLE"));
  EXPECT_EQ(trace.activities.size(), 6u);
}

TEST(ProfileInjection, SaysWhenNvtxIsNotRoutedToThisCupti) {
  const ChildRun unset = run_child_mode("exit", {{"NVTX_INJECTION64_PATH", ""}});
  EXPECT_TRUE(has_problem(read_trace(unset.trace()), "NVTX_INJECTION64_PATH is unset"));
  const ChildRun other = run_child_mode("exit", {{"NVTX_INJECTION64_PATH", INJECTION_LIBRARY}});
  EXPECT_TRUE(has_problem(read_trace(other.trace()), "not the libcupti in use"));
}

// Under --gemm-shapes: each kernel's correlation id, and the GEMM
// recorder's external correlations (not another tool's), which arrive
// after the kernel; joined, the recorded call lands on its kernel.
TEST(ProfileInjection, WithGemmShapesKernelsAndExternalIdsAreCorrelated) {
  auto env = kNvtxOk;
  env.emplace_back("REDLINE_PROFILE_GEMMS", "/nonexistent/gemms");
  const ChildRun run = run_child_mode("exit", env);
  ASSERT_TRUE(run.result.succeeded()) << run.result.describe_end();
  const Trace trace = read_trace(run.trace());
  expect_whole_trace(trace);
  ASSERT_EQ(trace.kernel_correlations.size(), 2u);  // the untimed kernel has none
  ASSERT_EQ(trace.external_correlations.size(), 1u);
  EXPECT_EQ(trace.external_correlations[0].external_id, 77);
  Trace calls;
  calls.gemm_calls = {{.external_id = 77, .m = 2, .n = 3, .k = 4, .batch = 1, .dtype = "bf16"}};
  const GemmJoin join = gemm_calls(calls, trace);
  ASSERT_EQ(join.gemms.size(), 1u);
  EXPECT_EQ(join.gemms[0].time_ns, 1000);
  const ChildRun plain = run_child_mode("exit", kNvtxOk);
  EXPECT_TRUE(read_trace(plain.trace()).kernel_correlations.empty());
}
