#include "bench/gemm/session.hpp"

#include <algorithm>
#include <iostream>

#include "bench/gemm/measure_settings.hpp"
#include "bench/gemm/roofline_cases.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/output.hpp"
#include "harness/tracking/references.hpp"
#include "harness/tracking/sweep_charts.hpp"
#include "kernels/device_query.cuh"
#include "kernels/gemm_lt.cuh"
#include "kernels/gpu_availability.cuh"

namespace redline::gemm {
namespace {

// Every flag read and checked, before any GPU is looked for.
struct CheckedFlags {
  std::vector<GemmDtype> dtypes;
  GemmLayout layout = GemmLayout::tn;
  MeasurementPolicy policy;
  std::vector<std::pair<GemmDtype, std::string>> unrunnable;
  int device = 0, algos = 1;
  double first_warmup = 1;
  DatasheetChoice datasheet;
};

CheckedFlags checked_flags(const MeasureFlags& f, const std::vector<GemmSize>& shapes) {
  CheckedFlags c;
  c.dtypes = dtypes_of(f);
  c.layout = layout_of(f);
  c.policy = policy_of(f.policy);
  c.unrunnable = unrunnable_dtypes(c.dtypes, c.layout, shapes);
  c.device = static_cast<int>(parse_count_between("--device", f.device, 0, 1024));
  c.algos = static_cast<int>(parse_count_between("--algos", f.algos, 1, 64));
  c.first_warmup = positive_seconds("--first-warmup", f.first_warmup);
  c.datasheet = datasheet_choice(f, c.dtypes);
  return c;
}

// The dtypes this GPU runs. Those it has no tensor-core path for, or that no
// shape suits, become skipped rows and summary lines with the reason; when
// none runs, the run cannot run here.
std::vector<GemmDtype> runnable_dtypes(const CheckedFlags& c, const DeviceProperties& props, Report& report) {
  auto skip = [&](GemmDtype dtype, const std::string& why) {
    Row row;
    row.param("dtype", gemm_dtype_info(dtype).name).param("layout", gemm_layout_name(c.layout));
    row.status = RowStatus::skipped;
    row.note = why;
    report.rows.push_back(row);
    report.summary.emplace_back(std::string(gemm_dtype_info(dtype).name), "skipped: " + why);
  };
  const int cc = props.compute_capability_major * 10 + props.compute_capability_minor;
  std::vector<GemmDtype> runnable;
  for (GemmDtype dtype : c.dtypes) {
    const int needed = required_compute_capability(dtype);
    const auto misfit =
        std::find_if(c.unrunnable.begin(), c.unrunnable.end(), [&](const auto& u) { return u.first == dtype; });
    if (misfit != c.unrunnable.end())
      skip(dtype, misfit->second);
    else if (cc < needed)
      skip(dtype, "needs compute capability " + std::to_string(needed / 10) + "." + std::to_string(needed % 10) +
                      "; this GPU is " + props.compute_capability());
    else
      runnable.push_back(dtype);
  }
  if (runnable.empty()) {
    std::string reasons;
    for (const Row& row : report.rows)
      reasons += (reasons.empty() ? "" : "; ") + row.param_value("dtype").value_or("?") + ": " + row.note;
    throw CannotRun("no requested dtype runs on " + props.name + " (" + reasons + ")");
  }
  return runnable;
}

void add_gpu_summary(Session& s, const DeviceProperties& props) {
  s.report.summary.emplace_back("gpu", props.name + ", " + std::to_string(props.sm_count) + " SMs, cuBLASLt " +
                                           cublaslt_version());
  if (s.gemm_options.peaks)
    s.report.summary.emplace_back(
        "datasheet", s.gemm_options.peaks->model + " (dense; --gpu / --datasheet-tflops / --datasheet-gbps override)");
  else
    s.report.summary.emplace_back("datasheet", "unknown for " + props.name + ": give --gpu or --datasheet-tflops");
}

bool is_gemm_row(const Row& r) { return r.param_value("m").has_value(); }

// 1 when any result failed verification, or when GEMM rows exist and none
// of them ran ok.
int exit_status(const Report& report) {
  auto any = [&](RowStatus status, bool gemm_only) {
    return std::any_of(report.rows.begin(), report.rows.end(),
                       [&](const Row& r) { return r.status == status && (!gemm_only || is_gemm_row(r)); });
  };
  // Shapes left out by --benchmark_filter are skipped, not failed.
  const bool has_gemm_rows = std::any_of(report.rows.begin(), report.rows.end(),
                                         [](const Row& r) { return is_gemm_row(r) && r.status != RowStatus::skipped; });
  if (any(RowStatus::wrong, false)) {
    std::cerr << "gemm_bench: FAILED: a result did not match its reference (status wrong)\n";
    return kExitCheckFailed;
  }
  if (interrupted()) return kExitInterrupted;
  if (has_gemm_rows && !any(RowStatus::ok, true)) {
    std::cerr << "gemm_bench: FAILED: no GEMM shape ran ok (the rows' notes say why)\n";
    return kExitCheckFailed;
  }
  return kExitOk;
}

}  // namespace

std::vector<Row> Session::run(const std::vector<GemmCaseSpec>& specs, const std::optional<MeasurementPolicy>& policy) {
  std::vector<std::unique_ptr<GpuCase>> cases;
  for (const auto& spec : specs) cases.push_back(make_gemm_case(spec, gemm_options));
  return runner->run(cases, policy);
}

std::vector<Row> Session::run_roofline() { return runner->run(roofline_cases(gemm_options.peaks)); }

Session start_session(MeasureFlags& f, const BenchmarkArgs& bench_args, const std::vector<GemmSize>& shapes) {
  const CheckedFlags checked = checked_flags(f, shapes);
  Session s;
  s.layout = checked.layout;
  s.policy = checked.policy;
  s.output = f.output;
  s.google = std::make_unique<GoogleBenchmarkReports>(bench_args, std::cout);
  // Google Benchmark's report owns stdout: the table would corrupt it.
  if (s.google->owns_display()) s.output.quiet = true;
  validate_output_paths(s.output);
  if (const auto reason = no_usable_gpu_reason(checked.device)) throw CannotRun(*reason);

  Environment env = capture_environment();
  add_cuda_gpu_info(env);
  s.report = start_report("gemm_bench", env);
  const DeviceProperties props = query_device_properties(checked.device);
  s.dtypes = runnable_dtypes(checked, props, s.report);

  CaseRunnerOptions options;
  options.policy = s.policy;
  options.first_warmup_seconds = checked.first_warmup;
  options.device = checked.device;
  options.repetitions = bench_args.repetitions;
  s.gemm_options.heuristic_candidates = checked.algos;
  s.gemm_options.peaks = datasheet_of(checked.datasheet, props.name);
  s.progress = std::make_unique<Progress>(f.progress ? 1 : -1);
  s.runner = std::make_unique<CaseRunner>(options, s.google->reporters(), *s.progress);
  add_gpu_summary(s, props);
  return s;
}

int finish_session(Session& s) {
  s.runner->finish();
  s.google->write_out_file();
  add_sweep_charts(s.report);  // for its JSON, as `redline report` draws them
  add_reference_summary(s.report);
  write_reports(s.report, s.output);
  return exit_status(s.report);
}

}  // namespace redline::gemm
