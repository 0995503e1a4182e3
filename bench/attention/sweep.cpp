// attention_bench sweep: every head layout measured on the GPU, per batch,
// path and direction, verified before it is timed; the attention block with
// its projections; the recommendation; and over a --batch axis the
// saturation.
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "bench/attention/attention_cases.hpp"
#include "bench/attention/subcommands.hpp"
#include "bench/attention/sweep_flags.hpp"
#include "harness/attention/sweep_analysis.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/progress.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/gbench_args.hpp"
#include "harness/report/gbench_output.hpp"
#include "harness/report/output.hpp"
#include "harness/tracking/references.hpp"
#include "harness/tracking/sweep_charts.hpp"
#include "kernels/attention_cudnn.cuh"
#include "kernels/attention_unfused.cuh"
#include "kernels/runner/case_runner.hpp"
#include "kernels/device_query.cuh"
#include "kernels/gemm_lt.cuh"
#include "kernels/gpu_availability.cuh"

namespace redline::attention {
namespace {

// A layout that cannot exist, or a path that cannot run the dtype: a row
// with the reason, never a case.
Row skipped_row(const LayoutGrid& grid, const HeadLayout& layout, std::int64_t batch, const std::string& path,
                const std::string& why) {
  Row row;
  row.param("hidden", std::to_string(grid.hidden)).param("heads", std::to_string(layout.heads));
  row.param("kv_heads", std::to_string(layout.kv_heads)).param("tp", std::to_string(layout.tp));
  row.param("head_dim", grid.hidden % layout.heads == 0 ? std::to_string(grid.hidden / layout.heads) : "");
  row.param("batch", std::to_string(batch)).param("seq", std::to_string(grid.seq));
  row.param("causal", grid.causal ? "yes" : "no").param("dtype", attention_dtype_name(grid.dtype));
  row.param("path", path).param("direction", "");
  row.status = RowStatus::skipped;
  row.note = why;
  return row;
}

std::string unmet_constraints(const HeadLayout& layout) {
  std::string text;
  for (const auto& c : layout_constraints(layout))
    if (c.required && !c.met) text += (text.empty() ? "" : "; ") + c.name + ": " + c.detail;
  return text;
}

// With --unfused-gemms: each GEMM of the unfused path in `spec`'s direction,
// alone.
void add_unfused_gemm_cases(const AttentionCaseSpec& spec, std::vector<std::unique_ptr<GpuCase>>& cases) {
  const auto gemms = unfused_attention_gemms(spec.shape, spec.dtype);
  for (std::size_t i = 0; i < gemms.size(); ++i)
    if (gemms[i].backward == (spec.direction == AttentionDirection::backward))
      cases.push_back(make_unfused_gemm_case(spec, i));
}

// The cases of one layout at one batch: projections, then each path's
// directions.
void add_layout_cases(const CheckedSweep& c, const AttentionCaseSpec& base, std::vector<std::unique_ptr<GpuCase>>& cases,
                      Report& report) {
  for (AttentionDirection direction : c.directions) {
    AttentionCaseSpec spec = base;
    spec.direction = direction;
    cases.push_back(make_projection_case(spec));
  }
  for (AttentionPath path : c.paths) {
    if (path == AttentionPath::unfused && base.dtype == GemmDtype::fp8_e4m3) {
      report.rows.push_back(skipped_row(c.grid, base.layout, base.shape.batch, "unfused",
                                        "the unfused path runs bf16 and fp16 only"));
      continue;
    }
    for (AttentionDirection direction : c.directions) {
      AttentionCaseSpec spec = base;
      spec.direction = direction;
      cases.push_back(make_attention_case(spec, path));
      if (path == AttentionPath::unfused && c.unfused_gemms) add_unfused_gemm_cases(spec, cases);
    }
  }
}

std::vector<std::unique_ptr<GpuCase>> sweep_cases(const CheckedSweep& c, const std::optional<GpuPeaks>& datasheet,
                                                  Report& report) {
  std::vector<std::unique_ptr<GpuCase>> cases;
  for (std::int64_t batch : c.grid.batches)
    for (const HeadLayout& layout : c.grid.layouts) {
      if (!layout_feasible(layout)) {
        report.rows.push_back(skipped_row(c.grid, layout, batch, "", "infeasible: " + unmet_constraints(layout)));
        continue;
      }
      AttentionCaseSpec spec;
      spec.layout = layout;
      spec.shape = per_gpu_shape(layout, batch, c.grid.seq, c.grid.causal);
      spec.dtype = c.grid.dtype;
      spec.peaks = datasheet;
      add_layout_cases(c, spec, cases, report);
    }
  return cases;
}

std::vector<LayoutPrediction> predictions_of(const CheckedSweep& c) {
  std::vector<LayoutPrediction> out;
  const ModelGpu gpu = model_gpu(c.grid.gpu);
  for (const HeadLayout& layout : c.grid.layouts)
    out.push_back(predict_layout(layout, c.grid.batches.back(), c.grid.seq, c.grid.causal, c.grid.dtype, gpu));
  return out;
}

void add_summary(Report& report, const CheckedSweep& c, const DeviceProperties& props, bool model_is_device) {
  report.summary.emplace_back("gpu", props.name + ", " + std::to_string(props.sm_count) + " SMs, cuBLASLt " +
                                         cublaslt_version() + ", cuDNN " + CudnnAttention::version());
  report.summary.emplace_back("model", c.grid.gpu.model + (model_is_device ? "" : " (not this GPU: --gpu, or the "
                                                                                   "device is not in the table)") +
                                           ": the reasons below come from attention_bench plan's model");
  report.summary.emplace_back("flops", "forward 4 b a_q s^2 d (causal: the exact s(s+1)/2 scores), backward 2.5x "
                                       "forward, per GPU; the block adds the QKV and output projections");
}

bool is_case_row(const Row& r) { return r.param_value("path").value_or("").size() > 0; }

// 1 when a result failed verification or no attention case ran ok (the
// projections and GEMMs alone are no answer); 130 after Ctrl-C.
int exit_status(const Report& report) {
  const auto any = [&](RowStatus status, bool (*which)(const Row&)) {
    return std::any_of(report.rows.begin(), report.rows.end(),
                       [&](const Row& r) { return r.status == status && which(r); });
  };
  if (any(RowStatus::wrong, is_case_row)) {
    std::cerr << "attention_bench: FAILED: a result did not match its reference (status wrong)\n";
    return kExitCheckFailed;
  }
  if (interrupted()) return kExitInterrupted;
  if (!any(RowStatus::ok, is_attention_path_row)) {
    std::cerr << "attention_bench: FAILED: no attention case ran ok (the rows' notes say why)\n";
    return kExitCheckFailed;
  }
  return kExitOk;
}

}  // namespace

int run_sweep(const SweepFlags& f, const BenchmarkArgs* bench_args) {
  CheckedSweep c = checked_sweep(f);
  OutputOptions output = f.output;
  GoogleBenchmarkReports google(*bench_args, std::cout);
  // Google Benchmark's report owns stdout: the table would corrupt it.
  if (google.owns_display()) output.quiet = true;
  validate_output_paths(output);
  if (const auto reason = no_usable_gpu_reason(c.device)) throw CannotRun(*reason);

  Environment env = capture_environment();
  add_cuda_gpu_info(env);
  Report report = start_report("attention_bench", env);
  const DeviceProperties props = query_device_properties(c.device);
  const std::optional<GpuPeaks> detected = lookup_gpu_peaks(props.name);
  if (f.layout.gpu.empty() && detected) c.grid.gpu = *detected;
  const std::optional<GpuPeaks> datasheet = f.layout.gpu.empty() ? detected : std::optional<GpuPeaks>(c.grid.gpu);

  CaseRunnerOptions options;
  options.policy = c.policy;
  options.first_warmup_seconds = c.first_warmup;
  options.device = c.device;
  options.repetitions = bench_args->repetitions;
  const Progress progress(f.progress ? 1 : -1);
  CaseRunner runner(options, google.reporters(), progress);
  const auto cases = sweep_cases(c, datasheet, report);
  for (Row& row : runner.run(cases)) report.rows.push_back(std::move(row));

  for (Row& block : attention_block_rows(report.rows)) report.rows.push_back(std::move(block));
  add_summary(report, c, props, f.layout.gpu.empty() && detected.has_value());
  for (auto& line : attention_recommendation(report.rows, predictions_of(c))) report.summary.push_back(std::move(line));
  for (auto& line : attention_saturation(report.rows)) report.summary.push_back(std::move(line));

  runner.finish();
  google.write_out_file();
  add_sweep_charts(report);
  add_reference_summary(report);
  write_reports(report, output);
  return exit_status(report);
}

}  // namespace redline::attention
