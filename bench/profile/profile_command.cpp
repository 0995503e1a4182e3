// redline profile -- COMMAND: runs the command with redline's CUPTI
// injection library (the CUDA driver loads it into the program through
// CUDA_INJECTION64_PATH; the program is not changed), reads the trace it
// wrote, finds the steps and reports where each step's GPU time goes, set
// against the ceilings a suite run measured. Exit 77 where it cannot run (no
// GPU, no injection library); 1 when the program failed (its profile is
// still written); 130 after Ctrl-C, the steps recorded so far profiled.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <optional>
#include <regex>

#include "bench/profile/output_marks.hpp"
#include "bench/profile/profile_flags.hpp"
#include "bench/profile/profile_launch.hpp"
#include "harness/core/child_process.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/profile/call_kernels.hpp"
#include "harness/profile/device_choice.hpp"
#include "harness/profile/gemm_calls.hpp"
#include "harness/profile/nccl_calls.hpp"
#include "harness/profile/profile_report.hpp"
#include "harness/profile/trace_file.hpp"
#include "harness/report/run_results.hpp"

namespace redline::profile {
namespace fs = std::filesystem;
namespace {

constexpr const char* kTool = "redline_profile";
using SummaryLines = std::vector<std::pair<std::string, std::string>>;

struct CheckedProfile {
  std::size_t steps = 0, skip = 0, top = 0;
  std::optional<int> device;
  std::regex step_range, step_regex;
  bool has_step_regex = false;
  std::optional<Ceilings> ceilings;
};

std::regex checked_regex(const char* flag, const std::string& text) {
  try {
    return std::regex(text);
  } catch (const std::regex_error& e) {
    throw UsageError(flag, text, std::string("is not a regular expression (") + e.what() + ")");
  }
}

// A saved trace is read instead of running a program: what needs the
// program's run has nothing to work on.
void check_saved_trace_flags(const ProfileFlags& f) {
  if (!f.command.empty())
    throw UsageError("--from-trace", f.from_trace, "reads a saved trace: give no COMMAND with it");
  if (!f.step_regex.empty())
    throw UsageError("--step-regex", f.step_regex, "needs the program's output: not with --from-trace");
  if (f.overhead) throw UsageError("--overhead", "", "runs the program: not with --from-trace");
  if (f.gemm_shapes)
    throw UsageError("--gemm-shapes", "", "records a program's calls: not with --from-trace (a TRACE.gemms file beside "
                                          "the trace is read)");
  if (f.nccl_sizes)
    throw UsageError("--nccl-sizes", "", "records a program's calls: not with --from-trace (a TRACE.nccl file beside "
                                         "the trace is read)");
  if (!f.trace.empty()) throw UsageError("--trace", f.trace, "keeps a new trace: not with --from-trace");
  std::error_code ec;
  if (!fs::is_regular_file(f.from_trace, ec)) throw UsageError("--from-trace", f.from_trace, "is not a file");
}

CheckedProfile checked(const ProfileFlags& f) {
  if (!f.from_trace.empty())
    check_saved_trace_flags(f);
  else if (f.command.empty())
    throw UsageError("COMMAND: give the program to profile after --");
  CheckedProfile c;
  c.steps = static_cast<std::size_t>(parse_count_between("--steps", f.steps, 0, 1 << 30));
  c.skip = static_cast<std::size_t>(parse_count_between("--skip", f.skip, 0, 1 << 30));
  c.top = static_cast<std::size_t>(parse_count_between("--top", f.top, 0, 10000));
  if (!f.device.empty()) c.device = static_cast<int>(parse_count_between("--device", f.device, 0, 1 << 20));
  c.step_range = checked_regex("--step-range", f.step_range);
  if ((c.has_step_regex = !f.step_regex.empty())) c.step_regex = checked_regex("--step-regex", f.step_regex);
  if (!f.ceilings.empty()) {
    try {
      c.ceilings = ceilings_from(load_results(f.ceilings));
    } catch (const std::exception& e) {
      throw UsageError("--ceilings", f.ceilings, e.what());
    }
  }
  validate_output_paths(f.output);
  if (!f.trace.empty()) validate_output_path("--trace", f.trace);
  // The library expands %p into each process's pid, so the file to read
  // would not be the one named here.
  if (f.trace.find("%p") != std::string::npos)
    throw UsageError("--trace", f.trace, "holds %p: redline reads one trace file; give a plain file name");
  // The reports must not replace the trace they are made from.
  for (const auto& [flag, trace] : {std::pair{"--trace", f.trace}, std::pair{"--from-trace", f.from_trace}}) {
    refuse_one_file_for_two(flag, trace, "--csv", f.output.csv_path);
    refuse_one_file_for_two(flag, trace, "--json", f.output.json_path);
  }
  return c;
}

ChildResult run_program(const std::vector<std::string>& command, const std::vector<std::pair<std::string, std::string>>& env,
                        OutputMarks& marks) {
  ChildSpec spec;
  spec.argv = command;
  spec.extra_env = env;
  if (marks.pattern) unbuffer_python_output(spec.extra_env);
  spec.output_limit = 1 << 20;
  // On Ctrl-C the injection library flushes for up to 10 s before the
  // signal ends the program; a second SIGTERM sooner would cut that short.
  spec.kill_grace_seconds = 12;
  spec.on_output = [&](std::string_view chunk) { marks.take(chunk); };
  ChildResult result = run_child(spec);
  if (!result.started) throw UsageError("COMMAND", command.front(), "cannot be started: " + result.start_error);
  return result;
}

fs::path trace_path(const ProfileFlags& f) {
  if (!f.trace.empty()) return fs::absolute(f.trace);
  return fs::temp_directory_path() / ("redline_profile." + std::to_string(::getpid()) + ".trace");
}

// The command again without the profiler: its wall time against the
// profiled run's, and the steps' when --step-regex marks them.
void add_overhead(Report& report, const ProfileFlags& f, const CheckedProfile& c, const ChildResult& profiled_run,
                  const OutputMarks& profiled) {
  std::cerr << "redline profile: running the command again without the profiler (--overhead)\n";
  OutputMarks marks{c.has_step_regex ? &c.step_regex : nullptr, {}, {}};
  const ChildResult plain = run_program(f.command, {}, marks);
  const auto median_gap = [](const std::vector<std::int64_t>& m) -> std::optional<double> {
    if (m.size() < 3) return std::nullopt;
    std::vector<double> gaps;
    for (std::size_t i = 1; i < m.size(); ++i) gaps.push_back(static_cast<double>(m[i] - m[i - 1]));
    std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
    return gaps[gaps.size() / 2];
  };
  const auto with = median_gap(profiled.marks), without = median_gap(marks.marks);
  if (with && without && profiled.timed_apart() && marks.timed_apart())
    report.summary.emplace_back("profiler overhead", format_percent(*with / *without - 1) +
                                                         " on the median step time (between --step-regex lines), one run each");
  report.summary.emplace_back("profiler overhead, whole run",
                              format_percent(profiled_run.wall_seconds / plain.wall_seconds - 1) +
                                  " of the wall time (start-up included), one run each");
}

// The recorded cuBLAS calls (`calls_file`, the GEMM recorder's) joined to
// the trace's kernels, so the GEMMs' FLOPs are known per step; what did not
// join is said in the summary. No file: the program made no call it records.
SummaryLines join_gemm_calls(Trace& trace, const fs::path& calls_file) {
  trace.gemm_calls_recorded = true;
  std::error_code ec;
  if (!fs::exists(calls_file, ec))
    return {{"gemm shapes", nothing_recorded(trace, Category::gemm, "no cuBLAS GEMM call was recorded",
                                             "they came from outside cuBLAS (cuDNN, CUTLASS, Triton), or the "
                                             "program's cuBLAS is out of the recorder's reach (linked statically, "
                                             "or called through its own dlsym handle)")}};
  const Trace calls = read_trace(calls_file);
  const GemmJoin join = gemm_calls(calls, trace);
  trace.gemms = join.gemms;
  trace.problems.insert(trace.problems.end(), calls.problems.begin(), calls.problems.end());
  SummaryLines summary = {
      {"gemm shapes", std::to_string(calls.gemm_calls.size()) + " cuBLAS GEMM calls recorded, " +
                          std::to_string(join.gemms.size()) + " of them joined to their kernels"}};
  if (join.without_kernel > 0)
    summary.emplace_back("gemm shapes", std::to_string(join.without_kernel) +
                                            " GEMM calls without a kernel in the trace (failed calls, or their "
                                            "kernels' records lost): their FLOPs are left out");
  return summary;
}

// The recorded NCCL calls (`calls_file`, the NCCL recorder's) joined to
// the trace's kernels, so NCCL's time is set against the bandwidth measured
// for the same collectives and sizes; what did not join is said.
SummaryLines join_nccl_calls(Trace& trace, const fs::path& calls_file) {
  trace.nccl_calls_recorded = true;
  std::error_code ec;
  if (!fs::exists(calls_file, ec))
    return {{"nccl sizes", nothing_recorded(trace, Category::nccl, "no NCCL call was recorded",
                                            "the program's NCCL is out of the recorder's reach (linked statically "
                                            "into another library, or called through its own dlsym handle)")}};
  const Trace calls = read_trace(calls_file);
  const NcclJoin join = nccl_calls(calls, trace);
  trace.nccl_launches = join.launches;
  trace.problems.insert(trace.problems.end(), calls.problems.begin(), calls.problems.end());
  SummaryLines summary = {{"nccl sizes", std::to_string(calls.nccl_calls.size()) + " NCCL calls recorded, in " +
                                             std::to_string(join.launches.size()) + " launches joined to their kernels"}};
  if (join.calls_without_kernel > 0)
    summary.emplace_back("nccl sizes", std::to_string(join.calls_without_kernel) +
                                           " NCCL calls without a kernel in the trace (failed calls, lost records, or a "
                                           "non-blocking communicator's later launch): left out of the comparison");
  return summary;
}

// Both recorders' files beside a trace, joined where they exist (a saved
// trace) or where their flags asked for them (a run: a missing file then
// means the program made no such call).
SummaryLines join_recorded_calls(Trace& trace, const fs::path& trace_file, bool gemms, bool nccl) {
  SummaryLines summary;
  if (gemms) summary = join_gemm_calls(trace, gemm_calls_file(trace_file));
  if (nccl) {
    const SummaryLines n = join_nccl_calls(trace, nccl_calls_file(trace_file));
    summary.insert(summary.end(), n.begin(), n.end());
  }
  return summary;
}

ProfileInput profile_input(const Trace& trace, const ProfileFlags& f, const CheckedProfile& c,
                           const std::vector<std::int64_t>& marks) {
  return {.trace = trace,
          .found = find_steps(trace, c.step_range, f.step_range, marks),
          .skip = c.skip,
          .limit = c.steps,
          .ceilings = c.ceilings,
          .top = c.top};
}

// The profile of a saved trace (--trace kept it, or another tool's records
// converted): no program runs, so no GPU is needed.
int profile_saved_trace(const ProfileFlags& f, const CheckedProfile& c) {
  Report report = start_report(kTool, capture_environment());
  Trace trace;
  SummaryLines calls_summary;
  try {
    trace = read_trace(f.from_trace);
    if (const auto devices = keep_one_device(trace, c.device)) calls_summary.emplace_back("devices", *devices);
    std::error_code ec;
    const SummaryLines joined = join_recorded_calls(trace, f.from_trace, fs::exists(gemm_calls_file(f.from_trace), ec),
                                                    fs::exists(nccl_calls_file(f.from_trace), ec));
    calls_summary.insert(calls_summary.end(), joined.begin(), joined.end());
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    throw UsageError("--from-trace", f.from_trace, e.what());
  }
  add_profile(report, profile_input(trace, f, c, {}));
  report.summary.insert(report.summary.end(), calls_summary.begin(), calls_summary.end());
  report.summary.emplace_back("trace", f.from_trace);
  write_reports(report, f.output);
  return kExitOk;
}

}  // namespace

int run_profile(const ProfileFlags& f) {
  const CheckedProfile c = checked(f);
  if (!f.from_trace.empty()) return profile_saved_trace(f, c);
  Environment env = capture_environment();
  const fs::path library = require_profiling_here(env);
  const fs::path trace_file = trace_path(f);
  auto injection = profiling_environment(library, trace_file);
  const auto recorders = call_recorders_environment({f.gemm_shapes, f.nccl_sizes}, trace_file);
  injection.insert(injection.end(), recorders.begin(), recorders.end());
  OutputMarks marks{c.has_step_regex ? &c.step_regex : nullptr, {}, {}};
  // A previous run's files: its recorders' would join this trace, and its
  // trace would pass for this run's if this program never loaded CUDA.
  remove_recorder_files(trace_file);
  std::error_code stale;
  fs::remove(trace_file, stale);
  const ChildResult result = run_program(f.command, injection, marks);
  struct RemoveTemporary {
    fs::path trace;
    bool keep;
    ~RemoveTemporary() {
      if (keep) return;
      std::error_code ec;
      fs::remove(trace, ec);
      remove_recorder_files(trace);
    }
  } remove{trace_file, !f.trace.empty()};
  std::error_code ec;
  if (!fs::exists(trace_file, ec))
    throw std::runtime_error("the program wrote no trace (" + result.describe_end() +
                             "): CUDA never loaded the injection library; did the program use the GPU?");
  Report report = start_report(kTool, std::move(env));
  try {
    Trace trace = read_trace(trace_file);
    if (!trace.ended)
      trace.problems.push_back("the trace has no end: the program ended without the profiler's exit flush (killed, "
                               "_exit, a crash), so the records CUPTI had not yet handed back are lost");
    const std::optional<std::string> devices = keep_one_device(trace, c.device);
    const int untraced = settle_recorder_files(trace_file, trace.process_id);
    SummaryLines calls_summary = join_recorded_calls(trace, trace_file, f.gemm_shapes, f.nccl_sizes);
    if (devices) calls_summary.insert(calls_summary.begin(), {"devices", *devices});
    if (untraced > 0)
      calls_summary.emplace_back("recorded calls", std::to_string(untraced) +
                                                       " other processes of the program recorded calls but were not "
                                                       "traced (one process a profile: the first to start CUDA); left out");
    add_profile(report, profile_input(trace, f, c, marks.marks));
    report.summary.insert(report.summary.end(), calls_summary.begin(), calls_summary.end());
  } catch (const std::runtime_error& e) {
    // Ctrl-C before a whole step: nothing to profile, and the exit still
    // says the run was interrupted.
    if (result.interrupted) {
      std::cerr << "redline profile: " << e.what() << "\n";
      return 128 + interrupt_signal();
    }
    const std::string keep = f.trace.empty() ? " (keep the trace with --trace FILE to look into it)" : "";
    if (const auto* usage = dynamic_cast<const UsageError*>(&e)) throw UsageError(usage->flag(), usage->value(), usage->problem() + keep);
    throw std::runtime_error(e.what() + keep);
  }
  report.summary.emplace_back("program", result.describe_end() + ", " + format_number(result.wall_seconds, 1) + " s");
  if (!marks.timed_apart()) report.summary.push_back(buffered_output_warning(marks));
  if (f.overhead && !interrupted()) add_overhead(report, f, c, result, marks);
  write_reports(report, f.output);
  // Ctrl-C stopped the program: what it recorded is profiled and written,
  // and the exit says it was interrupted, as every tool's does.
  if (result.interrupted) return 128 + interrupt_signal();
  return result.succeeded() ? kExitOk : kExitCheckFailed;
}

}  // namespace redline::profile
