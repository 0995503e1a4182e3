// redline profile end to end where it can run here: bad input is exit 2
// naming the flag and the value, printed once; without a GPU it exits 77
// with the reason (on a GPU machine, a program that never uses CUDA leaves
// no trace, and the profile says so); a saved trace is profiled without a
// GPU, its rows and summary written.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "bench/profile/output_marks.hpp"
#include "bench/profile/profile_launch.hpp"
#include "harness/core/child_process.hpp"
#include "harness/profile/trace_file.hpp"
#include "harness/report/csv_reader.hpp"
#include "tests/support.hpp"

using namespace redline;

namespace {

class ProfileCommand : public redline::testing::TempDirTest {
 protected:
  ChildResult profile(std::vector<std::string> args) const {
    ChildSpec spec;
    spec.argv = {REDLINE_BIN, "profile"};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.timeout_seconds = 60;
    return run_child(spec);
  }
  static std::size_t count(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  }
};

TEST_F(ProfileCommand, BadInputNamesTheFlagOnce) {
  const std::string csv = (dir_ / "p.csv").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--csv", csv}, "COMMAND: give the program to profile after --"},
      {{"--skip", "x", "--csv", csv, "--", "true"}, "--skip 'x'"},
      {{"--steps", "-1", "--csv", csv, "--", "true"}, "--steps '-1'"},
      {{"--step-regex", "(", "--csv", csv, "--", "true"}, "--step-regex '(': is not a regular expression"},
      {{"--step-range", "[", "--csv", csv, "--", "true"}, "--step-range '['"},
      {{"--ceilings", (dir_ / "missing").string(), "--csv", csv, "--", "true"}, "--ceilings"},
      {{"--csv", dir_.string(), "--", "true"}, "is a directory"},
      {{"--trace", (dir_ / "run.%p.trace").string(), "--csv", csv, "--", "true"}, "holds %p"},
      {{"--trace", csv, "--csv", csv, "--", "true"}, "--csv '" + csv + "': is also the --trace file"}};
  for (const auto& [args, names] : cases) {
    const ChildResult r = profile(args);
    EXPECT_EQ(r.exit_code, 2) << names << "\n" << r.output;
    EXPECT_CONTAINS(r.output, names);
    EXPECT_EQ(count(r.output, names), 1u) << r.output;
    EXPECT_FALSE(std::filesystem::exists(csv)) << names;
  }
}

TEST_F(ProfileCommand, SaysWhyItCannotRunHere) {
  const std::string csv = (dir_ / "p.csv").string();
  const ChildResult r = profile({"--csv", csv, "--", "true"});
  if (r.exit_code == 77) {
    EXPECT_TRUE(r.output.find("no GPU to profile on") != std::string::npos ||
                r.output.find("libredline_profile_injection.so") != std::string::npos)
        << r.output;
    EXPECT_CONTAINS(r.output, "skipped: ");
  } else {
    // A GPU machine: `true` never loads CUDA, so no trace; nothing is written.
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_CONTAINS(r.output, "the program wrote no trace");
  }
  EXPECT_FALSE(std::filesystem::exists(csv));
}

// Three steps marked by NVTX, each a GEMM, a copy to the host and an NCCL
// all-reduce beside a norm kernel, written in the injection library's format.
std::filesystem::path write_trace(const std::filesystem::path& dir) {
  using namespace redline::profile;
  std::string text = trace_header() + clock_line(0, 1000);
  for (std::int64_t s = 0; s < 3; ++s) {
    const std::int64_t t = s * 10000000;  // 10 ms a step
    text += trace_line({.kind = ActivityKind::range, .start_ns = t, .end_ns = t + 10000000, .name = "train step"});
    text += trace_line({.kind = ActivityKind::kernel, .start_ns = t + 1000000, .end_ns = t + 5000000, .stream = 7,
                        .name = "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT"});
    text += trace_line({.kind = ActivityKind::kernel, .start_ns = t + 5000000, .end_ns = t + 7000000, .stream = 9,
                        .name = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"});
    text += trace_line({.kind = ActivityKind::kernel, .start_ns = t + 5000000, .end_ns = t + 6000000, .stream = 7,
                        .name = "void rmsnorm_forward<__nv_bfloat16>(...)"});
    text += trace_line({.kind = ActivityKind::memcpy, .start_ns = t + 8000000, .end_ns = t + 9000000, .stream = 7,
                        .copy = CopyKind::d2h, .bytes = 25000000});
  }
  text += dropped_line(0);
  const auto path = dir / "saved.trace";
  std::ofstream(path) << text;
  return path;
}

TEST_F(ProfileCommand, ASavedTraceIsProfiledWithoutAGpu) {
  const std::string trace = write_trace(dir_).string(), csv = (dir_ / "p.csv").string(),
                    json = (dir_ / "p.json").string();
  const std::string references = std::string(SOURCE_DIR) + "/results/references/H200";
  const ChildResult r =
      profile({"--from-trace", trace, "--skip", "1", "--ceilings", references, "--csv", csv, "--json", json});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "3 found by NVTX ranges matching");
  EXPECT_CONTAINS(r.output, "2 profiled after skipping 1");
  // The H200's references hold its MAMF but no copy or collective figure,
  // and the trace no GEMM shapes: each finding says what it lacks.
  EXPECT_CONTAINS(r.output, "the GEMM shapes are unknown");
  EXPECT_CONTAINS(r.output, "NCCL: 2.00 ms a step, 50% of it overlapped with compute");
  EXPECT_CONTAINS(r.output, "no measured pinned D2H bandwidth in the ceilings");
  EXPECT_CONTAINS(r.output, "largest gap:");
  EXPECT_CONTAINS(r.output, "the GPU is idle 30% of the step, mostly between kernels");
  const CsvTable table = read_csv(csv);
  std::size_t steps = 0;
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    EXPECT_EQ(table.value(i, "tool"), "redline_profile");
    if (table.value(i, "category") != "step") continue;
    ++steps;
    EXPECT_EQ(std::stod(table.value(i, "wall_ms")), 10);
    EXPECT_EQ(std::stod(table.value(i, "idle_pct")), 30);  // busy 1-7 ms and 8-9 ms of 10
    EXPECT_EQ(std::stod(table.value(i, "idle_between_ms")), 1);
  }
  EXPECT_EQ(steps, 2u);
  std::ifstream in(json);
  const auto doc = nlohmann::json::parse(in);
  EXPECT_FALSE(doc["benchmarks"].empty());
}

// --gemm-shapes's records kept beside a saved trace (TRACE.gemms): each
// step's GEMM call joined to its kernel through CUPTI's correlation ids,
// and a call without a kernel counted.
TEST_F(ProfileCommand, ASavedTracesGemmCallsAreJoinedToItsKernels) {
  using namespace redline::profile;
  const std::filesystem::path trace = write_trace(dir_);
  std::string correlations, calls = trace_header();
  for (std::int64_t s = 0; s < 3; ++s) {
    correlations += kernel_correlation_line({100 + s, s * 10000000 + 1000000, s * 10000000 + 2000000}) +
                    external_correlation_line(100 + s, s + 1);
    // 2*8192^3 FLOP in the 4 ms GEMM kernel: 274.9 TFLOPS.
    calls += gemm_call_line({.external_id = s + 1, .m = 8192, .n = 8192, .k = 8192, .batch = 1, .dtype = "bf16"});
  }
  calls += gemm_call_line({.external_id = 99, .m = 1, .n = 1, .k = 1, .batch = 1, .dtype = "bf16"});
  std::ofstream(trace, std::ios::app) << correlations;
  std::ofstream(trace.string() + ".gemms") << calls;
  const std::string references = std::string(SOURCE_DIR) + "/results/references/H200";
  const ChildResult r = profile({"--from-trace", trace.string(), "--skip", "1", "--ceilings", references});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "GEMMs run at ");
  EXPECT_CONTAINS(r.output, "of this GPU's measured bf16 MAMF (274.9 of ");
  EXPECT_CONTAINS(r.output, "4 cuBLAS GEMM calls recorded, 3 of them joined to their kernels");
  EXPECT_CONTAINS(r.output, "1 GEMM calls without a kernel in the trace");
  const ChildResult refused = profile({"--from-trace", trace.string(), "--gemm-shapes"});
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_CONTAINS(refused.output, "--gemm-shapes");
}

// --nccl-sizes's records kept beside a saved trace (TRACE.nccl), set against
// ceilings a real allreduce_bench run measured: two host-backend ranks over
// real MPI processes, whose CSV and JSON (its ranks) the profile reads. Each
// step's all-reduce of 1M floats (4M, a measured size) over two ranks is
// compared; a call whose kernel the trace lacks is counted.
TEST_F(ProfileCommand, ASavedTracesNcclCallsAreSetAgainstAMeasuredAllReduce) {
#if defined(ALLREDUCE_BENCH) && defined(MPIEXEC)
  using namespace redline::profile;
  const std::filesystem::path ceilings = dir_ / "cluster";
  std::filesystem::create_directories(ceilings);
  ChildSpec bench;
  bench.argv = {MPIEXEC, "--oversubscribe", "--allow-run-as-root", "--bind-to", "none", "-np", "2", ALLREDUCE_BENCH,
                "--backend", "host", "-b", "1M", "-e", "16M", "-f", "4", "-n", "3", "-w", "1",
                "--csv", (ceilings / "ar.csv").string(), "--json", (ceilings / "ar.json").string()};
  bench.timeout_seconds = 240;
  const ChildResult measured = redline::run_child(bench);
  ASSERT_TRUE(measured.succeeded()) << measured.describe_end() << "\n" << measured.output;

  const std::filesystem::path trace = write_trace(dir_);
  std::string correlations, calls = trace_header();
  for (std::int64_t s = 0; s < 3; ++s) {
    const std::int64_t t = s * 10000000;  // the step's 2 ms NCCL kernel (write_trace's)
    correlations += kernel_correlation_line({200 + s, t + 5000000, t + 7000000}) +
                    external_correlation_line(200 + s, 0x80000000LL + s);
    calls += nccl_call_line(
        {.external_id = 0x80000000LL + s, .collective = "all_reduce", .count = 1 << 20, .element_bytes = 4, .ranks = 2});
  }
  calls += nccl_call_line({.external_id = 7, .collective = "all_reduce", .count = 8, .element_bytes = 4, .ranks = 2});
  std::ofstream(trace, std::ios::app) << correlations;
  std::ofstream(trace.string() + ".nccl") << calls;
  const ChildResult r = profile({"--from-trace", trace.string(), "--skip", "1", "--ceilings", ceilings.string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "4 NCCL calls recorded, in 3 launches joined to their kernels");
  EXPECT_CONTAINS(r.output, "1 NCCL calls without a kernel in the trace");
  EXPECT_CONTAINS(r.output, "of the bandwidth measured for the same collectives and sizes (2.00 ms a step where the "
                            "measured algbw gives ");
  EXPECT_CONTAINS(r.output, "2 of 2 launches compared");
  // The same calls over 8 ranks were not measured: said, not compared.
  std::string other = trace_header();
  for (std::int64_t s = 0; s < 3; ++s)
    other += nccl_call_line(
        {.external_id = 0x80000000LL + s, .collective = "all_reduce", .count = 1 << 20, .element_bytes = 4, .ranks = 8});
  std::ofstream(trace.string() + ".nccl") << other;
  const ChildResult wider = profile({"--from-trace", trace.string(), "--skip", "1", "--ceilings", ceilings.string()});
  ASSERT_EQ(wider.exit_code, 0) << wider.output;
  EXPECT_CONTAINS(wider.output, "0 of 2 launches compared; 2 not compared: all_reduce over 8 ranks: not measured");
  const ChildResult refused = profile({"--from-trace", trace.string(), "--nccl-sizes"});
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_CONTAINS(refused.output, "--nccl-sizes");
#else
  GTEST_SKIP() << "allreduce_bench or mpirun was not built here";
#endif
}

// The reports may not replace the saved trace they are made from: it cannot
// be made again without the GPU run.
TEST_F(ProfileCommand, AnOutputNamingTheSavedTraceIsRefusedAndTheTraceKept) {
  const std::filesystem::path trace = write_trace(dir_);
  const std::string before = redline::testing::read_all(trace);
  for (const char* flag : {"--csv", "--json"}) {
    const ChildResult r = profile({"--from-trace", trace.string(), flag, trace.string()});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_CONTAINS(r.output, std::string(flag) + " '" + trace.string() + "': is also the --from-trace file");
  }
  EXPECT_EQ(redline::testing::read_all(trace), before);
}

TEST_F(ProfileCommand, ASavedTraceTakesNoProgramFlags) {
  const std::string trace = write_trace(dir_).string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--from-trace", trace, "--", "true"}, "--from-trace '" + trace + "': reads a saved trace: give no COMMAND"},
      {{"--from-trace", trace, "--step-regex", "step"}, "--step-regex 'step': needs the program's output"},
      {{"--from-trace", trace, "--overhead"}, "--overhead"},
      {{"--from-trace", (dir_ / "none").string()}, "is not a file"}};
  for (const auto& [args, names] : cases) {
    const ChildResult r = profile(args);
    EXPECT_EQ(r.exit_code, 2) << names << "\n" << r.output;
    EXPECT_CONTAINS(r.output, names);
  }
  std::ofstream(dir_ / "bad.trace") << "not a trace\n";
  const ChildResult bad = profile({"--from-trace", (dir_ / "bad.trace").string()});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_CONTAINS(bad.output, "not a redline profile trace");
}

}  // namespace

// Each process records into a file of its own; after the run the traced
// process's files take the saved trace's names and the others go, and a
// previous run's files are removed before the next.
TEST(ProfileRecorderFiles, TheTracedProcesssFilesAreKeptUnderTheTracesNames) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / ("recorder_files_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path trace = dir / "run.trace";
  const auto write = [](const fs::path& path, const std::string& text) { std::ofstream(path) << text; };
  for (const char* name : {"run.trace", "run.trace.gemms.100", "run.trace.nccl.100", "run.trace.gemms.200",
                           "run.trace.gemms.x1", "other.trace.gemms.200"})
    write(dir / name, name);
  write(dir / "run.trace.nccl", "a previous run's");
  const auto read = [](const fs::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };

  EXPECT_EQ(profile::settle_recorder_files(trace, 100), 1);  // process 200 recorded calls, untraced
  EXPECT_EQ(read(dir / "run.trace.gemms"), "run.trace.gemms.100");
  EXPECT_EQ(read(dir / "run.trace.nccl"), "run.trace.nccl.100");
  EXPECT_FALSE(fs::exists(dir / "run.trace.gemms.200"));
  EXPECT_TRUE(fs::exists(dir / "run.trace.gemms.x1"));     // not a process's file
  EXPECT_TRUE(fs::exists(dir / "other.trace.gemms.200"));  // another trace's

  write(dir / "run.trace.nccl.300", "left by a killed run");
  profile::remove_recorder_files(trace);
  for (const char* gone : {"run.trace.gemms", "run.trace.nccl", "run.trace.nccl.300"})
    EXPECT_FALSE(fs::exists(dir / gone)) << gone;
  EXPECT_TRUE(fs::exists(trace));
  EXPECT_TRUE(fs::exists(dir / "other.trace.gemms.200"));
  fs::remove_all(dir);
}

// --step-regex's reading of the program's output: a line ends at '\n' or
// '\r' (a "\r\n" ending counts once), and lines that come in one read are
// counted as having come together, their steps merged.
TEST(ProfileOutputMarks, LinesEndAtEitherEndingAndTogetherIsCounted) {
  const std::regex pattern("^step");
  profile::OutputMarks marks{&pattern};
  marks.take_at("step 1\nstep 2\nloss 3\n", 100);
  marks.take_at("step 3\r\nst", 200);
  marks.take_at("ep 4\r", 300);
  EXPECT_EQ(marks.marks, (std::vector<std::int64_t>{100, 100, 200, 300}));
  EXPECT_EQ(marks.together, 1u);
  EXPECT_FALSE(marks.timed_apart());
  EXPECT_CONTAINS(profile::buffered_output_warning(marks).second, "1 of the 4 lines matching --step-regex");
}

// A 60,000-character line (a progress bar redrawn without a newline) under a
// pattern with ".*": libstdc++'s regex recursion overflowed the stack on it
// and killed redline mid-run. The line's first 4096 characters are matched.
TEST(ProfileOutputMarks, AVeryLongLineIsMatchedOnItsStartWithoutCrashing) {
  const std::regex pattern("step.*loss");
  profile::OutputMarks marks{&pattern};
  ::testing::internal::CaptureStderr();  // take_at echoes the program's output
  marks.take_at("step 1 loss " + std::string(60000, 'x') + "\n", 100);
  marks.take_at(std::string(60000, 'x') + " step 2 loss\n", 200);  // past the matched start: not seen
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(marks.marks, (std::vector<std::int64_t>{100}));
}

// A real Python program printing a step line every 0.2 s into a pipe: left
// buffered its lines come at its exit, together; with the variable redline
// sets, one at a time.
TEST(ProfileOutputMarks, PythonsStepLinesComeOneAtATimeUnbuffered) {
  const std::regex pattern("^step");
  const auto run = [&](std::vector<std::pair<std::string, std::string>> env) {
    profile::OutputMarks marks{&pattern};
    ChildSpec spec;
    spec.argv = {"python3", "-c", "import time\nfor i in range(3):\n    print('step', i)\n    time.sleep(0.2)\n"};
    spec.extra_env = std::move(env);
    spec.timeout_seconds = 60;
    spec.on_output = [&](std::string_view chunk) { marks.take(chunk); };
    const ChildResult result = run_child(spec);
    EXPECT_TRUE(result.succeeded()) << result.describe_end() << result.output;
    return marks;
  };
  const profile::OutputMarks buffered = run({{"PYTHONUNBUFFERED", ""}});
  EXPECT_EQ(buffered.marks.size(), 3u);
  EXPECT_EQ(buffered.together, 2u);
  std::vector<std::pair<std::string, std::string>> env;
  ::unsetenv("PYTHONUNBUFFERED");
  profile::unbuffer_python_output(env);
  ASSERT_EQ(env.size(), 1u);
  const profile::OutputMarks unbuffered = run(env);
  EXPECT_EQ(unbuffered.marks.size(), 3u);
  EXPECT_TRUE(unbuffered.timed_apart());
}
