// train_step_bench run: trains the CUDA stack at one configuration on a
// fixed random batch: warm-up steps, then optimizer steps timed with CUDA
// events (per phase too), one more step traced to split the time between
// GEMMs, attention and the elementwise kernels, one micro-batch's GEMM and
// attention calls timed alone (the steps and the calls through the case
// runner's sample timer and the measurement policy), and the measured memory
// beside the model's prediction. Prints the figures `sweep` reads from its
// children ("tokens_per_s: ...", "measured_peak_bytes: ...").
#include <cuda_runtime_api.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/train/step_flags.hpp"
#include "bench/train/subcommands.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/gpu/gpu_peaks.hpp"
#include "harness/gpu/kernel_category.hpp"
#include "harness/measure/measurement.hpp"
#include "harness/measure/stats.hpp"
#include "harness/report/report.hpp"
#include "harness/tracking/references.hpp"
#include "harness/train/activation_memory.hpp"
#include "harness/train/step_flops.hpp"
#include "harness/train/trial_figures.hpp"
#include "kernels/attention_cudnn.cuh"
#include "kernels/cuda_check.cuh"
#include "kernels/device_query.cuh"
#include "kernels/gpu_availability.cuh"
#include "kernels/kernel_trace.cuh"
#include "kernels/nvtx_range.cuh"
#include "kernels/runner/sample_timer.hpp"
#include "kernels/train/train_stack.cuh"

namespace redline::train {
namespace {

// A fixed batch (so the loss must fall over the steps): random tokens, each
// target the next token of its sequence.
struct Batch {
  std::vector<std::int32_t> tokens, targets;
};

Batch fixed_batch(const CheckedRun& c) {
  std::mt19937 random(1234);
  std::uniform_int_distribution<std::int32_t> token(0, static_cast<std::int32_t>(c.config.vocab - 1));
  Batch b;
  for (std::int64_t i = 0; i < c.mbs * c.seq; ++i) b.tokens.push_back(token(random));
  for (std::int64_t i = 0; i < c.mbs * c.seq; ++i)
    b.targets.push_back((i + 1) % c.seq == 0 ? token(random) : b.tokens[static_cast<std::size_t>(i + 1)]);
  return b;
}

// Device memory this process holds now, from the driver's view.
std::int64_t used_device_bytes(std::int64_t free_at_start) {
  std::size_t free = 0, total = 0;
  REDLINE_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free_at_start - static_cast<std::int64_t>(free);
}

struct StepFigures {
  std::vector<double> step_ms;
  PhaseTimes phases;  // summed over the timed steps
  std::vector<float> losses;
  std::int64_t peak_used = 0;  // the largest cudaMemGetInfo delta seen after a step
};

// One optimizer step over --ga micro-batches, enqueued back to back with no
// wait in between: the host enqueues ahead while the GPU runs, so the GPU
// does not wait for the host between micro-batches.
void enqueue_train_step(TrainStack& stack, const CheckedRun& c) {
  stack.zero_grads();
  for (int m = 0; m < c.ga; ++m) stack.enqueue_forward_backward();
  stack.optimizer_step(AdamWSettings{});
}

void add_phase_times(PhaseTimes& sum, const PhaseTimes& step) {
  sum.forward_ms += step.forward_ms, sum.backward_ms += step.backward_ms, sum.optimizer_ms += step.optimizer_ms;
}

// The steps as the measurement policy's samples: --warmup untimed steps,
// then exactly --steps timed ones (no noise stop or time cap: the loss check
// reads the whole run, and the flags are the user's). Ctrl-C does not cut
// them short: the figures need every step, and a second Ctrl-C still quits.
MeasurementPolicy step_policy(const CheckedRun& c) {
  MeasurementPolicy policy = fixed_count_policy(c.steps);
  policy.warmup_iterations = c.warmup;
  policy.stops_on_interrupt = false;
  return policy;
}

// One step a sample, not held behind the stream blocker: a step is hundreds
// to thousands of launches, more than a held stream's launch queue takes,
// and the host's enqueue pace between its kernels is part of a real step.
// After each sample (the step is finished then): its loss, the phase times
// and the memory in use.
StepFigures timed_steps(TrainStack& stack, const CheckedRun& c, cudaStream_t stream, std::int64_t free_at_start) {
  struct AfterStep {
    float loss;
    PhaseTimes phases;
    std::int64_t used;
  };
  std::vector<AfterStep> after;  // every sample's, the warm-up's first
  SampleTimer timer(stream, SampleShape{.sample_seconds = 0, .max_calls = 1, .held = false});
  const Measurement m =
      timer
          .time(step_policy(c), [&](int) { enqueue_train_step(stack, c); }, {},
                [&] { after.push_back({stack.last_loss(), stack.last_phase_times(), used_device_bytes(free_at_start)}); })
          .measurement;
  StepFigures f;
  for (double seconds : m.samples) f.step_ms.push_back(seconds * 1e3);
  for (std::size_t i = after.size() - m.samples.size(); i < after.size(); ++i) {
    f.losses.push_back(after[i].loss);
    // Every micro-batch's forward and backward (the stack keeps a timer pair
    // per micro-batch of the accumulation) and the optimizer.
    add_phase_times(f.phases, after[i].phases);
    f.peak_used = std::max(f.peak_used, after[i].used);
  }
  return f;
}

// Each GEMM and attention call of a micro-batch timed alone: milliseconds
// each at real shapes, so a few samples after one warm-up sample settle
// them (a 2% spread); the caps keep a stack of hundreds of calls to seconds
// when the GPU is noisy.
MeasurementPolicy alone_policy() {
  MeasurementPolicy policy;
  policy.warmup_iterations = 1;
  policy.warmup_seconds = 0;
  policy.min_repetitions = 3;
  policy.max_repetitions = 20;
  policy.target_cv = 0.02;
  policy.min_seconds = 0;
  policy.max_seconds = 2;
  return policy;
}

// The step's calls timed alone, last (it changes the gradients). A failure
// costs this figure only: the step's own figures are already measured.
std::optional<PartsAlone> parts_alone(TrainStack& stack, std::string& note) {
  try {
    return stack.time_parts_alone(alone_policy());
  } catch (const std::exception& e) {
    note += std::string(note.empty() ? "" : "; ") + "parts alone not measured: " + e.what();
    return std::nullopt;
  }
}

// One more step under CUPTI: each kernel's GPU time by category.
std::map<KernelCategory, double> category_ms(TrainStack& stack, const CheckedRun& c, cudaStream_t stream,
                                            std::string& note) {
  std::map<KernelCategory, double> ms;
  const KernelTrace trace = trace_kernels([&] {
    enqueue_train_step(stack, c);
    REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
  });
  if (trace.unavailable) note = "kernel split not measured: " + *trace.unavailable;
  for (const LaunchedKernel& k : trace.kernels) ms[kernel_category(k.name)] += k.duration_ns / 1e6;
  return ms;
}

// The step beside its GEMM and attention calls measured alone (every
// micro-batch of --ga runs the same calls): the step-time target is
// step_over_alone at most 1.10. The optimizer is in the step but in neither
// part: one memory-bound pass over every parameter, set by the parameter
// count, not the batch. passes_over_alone leaves it out, so it reads what the
// elementwise kernels of the forward and backward passes add at any batch.
void add_parts_alone(Row& row, const CheckedRun& c, const std::optional<PartsAlone>& measured, double step_ms,
                     double passes_ms) {
  if (!measured) return;
  const PartsAlone& alone = *measured;
  const double gemm_ms = alone.gemm_ms * c.ga, attention_ms = alone.attention_ms * c.ga;
  row.metric("gemm_alone_ms", gemm_ms).metric("attention_alone_ms", attention_ms);
  if (gemm_ms + attention_ms <= 0) return;
  row.metric("step_over_alone", step_ms / (gemm_ms + attention_ms));
  row.metric("passes_over_alone", passes_ms / (gemm_ms + attention_ms));
}

// The optimizer phase is one AdamW pass over the state, so its bytes over
// its time is the bandwidth it reached: how close to the GPU's HBM the fixed
// per-step cost already is.
void add_optimizer_bandwidth(Row& row, const CheckedRun& c, double optimizer_ms) {
  if (optimizer_ms <= 0) return;
  const double bytes = static_cast<double>(state_bytes(c.config).adamw_traffic());
  row.metric("optimizer_GBps", bytes / (optimizer_ms / 1e3) / 1e9);
}

Row result_row(const CheckedRun& c, const StepFigures& f, const std::map<KernelCategory, double>& split,
               const std::optional<PartsAlone>& alone, const AllocatedBytes& allocated,
               std::optional<GpuPeaks> peaks) {
  Row row;
  row.param("model", c.config.name).param("layers", std::to_string(c.config.layers));
  row.param("seq", std::to_string(c.seq)).param("mbs", std::to_string(c.mbs)).param("ga", std::to_string(c.ga));
  row.param("recompute", recompute_name(c.recompute)).param("attention", attention_choice_name(c.attention));
  const double step_s = summarize(f.step_ms).median / 1e3;
  const double tokens = static_cast<double>(c.mbs * c.seq * c.ga);
  const StepFlops flops = step_flops(c.config, c.mbs, c.seq, c.recompute, c.attention);
  row.metric("tokens_per_s", tokens / step_s).metric("step_time_ms", step_s * 1e3);
  const double steps = static_cast<double>(c.steps);
  row.metric("forward_ms", f.phases.forward_ms / steps).metric("backward_ms", f.phases.backward_ms / steps);
  row.metric("optimizer_ms", f.phases.optimizer_ms / steps);
  add_optimizer_bandwidth(row, c, f.phases.optimizer_ms / steps);
  row.metric("model_tflops", flops.model * c.ga / step_s / 1e12);
  if (peaks && peaks->bf16_tflops > 0) {
    row.metric("mfu_pct", 100 * flops.model * c.ga / step_s / (peaks->bf16_tflops * 1e12));
    row.metric("hfu_pct", 100 * flops.hardware * c.ga / step_s / (peaks->bf16_tflops * 1e12));
  }
  for (const auto& [category, ms] : split) row.metric(std::string(kernel_category_name(category)) + "_ms", ms);
  // The target: the step within 10% of its GEMM and attention time,
  // i.e. everything else (elementwise kernels, launch gaps) under ~9%.
  if (split.count(KernelCategory::gemm) && split.count(KernelCategory::attention))
    row.metric("other_pct", 100 * (1 - (split.at(KernelCategory::gemm) + split.at(KernelCategory::attention)) /
                                           (step_s * 1e3)));
  add_parts_alone(row, c, alone, step_s * 1e3, (f.phases.forward_ms + f.phases.backward_ms) / steps);
  const MemoryPrediction predicted = predict_memory(c.config, c.mbs, c.seq, c.recompute, c.attention);
  row.metric("allocated_bytes", static_cast<double>(allocated.total()));
  row.metric("measured_peak_bytes", static_cast<double>(f.peak_used));
  row.metric("predicted_peak_bytes", static_cast<double>(predicted.peak()));
  // No growth seen (another process freed memory meanwhile): no error to state.
  if (f.peak_used > 0)
    row.metric("memory_error_pct", 100 * (static_cast<double>(predicted.peak()) / static_cast<double>(f.peak_used) - 1));
  row.metric("loss_first", f.losses.front()).metric("loss_last", f.losses.back());
  return row;
}

// The lines `sweep` reads from each trial (harness/train/trial_figures.hpp).
void print_trial_figures(const Row& row) {
  for (const char* name : kTrialFigures)
    if (const auto v = row.metric_value(name)) std::cout << trial_figure_line(name, *v);
}

// What the optimizer costs the step, how close to the HBM it runs, and that
// gradient accumulation spreads it: it runs once per step, not per micro-batch.
std::string optimizer_line(double optimizer_ms, double step_ms, double gbps, std::int64_t ga,
                           const std::optional<GpuPeaks>& peaks) {
  std::string line = format_number(optimizer_ms, 2) + " ms, " + format_percent(optimizer_ms / step_ms) +
                     " of the step; AdamW moved " + format_number(gbps, 0) + " GB/s";
  if (peaks && peaks->hbm_GBps > 0)
    line += " (" + format_percent(gbps / peaks->hbm_GBps) + " of " + peaks->model + "'s HBM)";
  return line + "; once per step, shared by the step's " + std::to_string(ga) + " micro-batch" + (ga == 1 ? "" : "es") +
         " (--ga)";
}

}  // namespace

void require_training_gpu(int device) {
  if (const auto reason = no_usable_gpu_reason(device)) throw CannotRun(*reason);
}

int run_step(const RunFlags& f) {
  const CheckedRun c = checked_run(f);
  validate_output_paths(f.output);
  require_training_gpu(c.device);
  REDLINE_CUDA_CHECK(cudaSetDevice(c.device));
  Environment env = capture_environment();
  add_cuda_gpu_info(env);
  Report report = start_report("train_step_bench", env);
  const DeviceProperties props = query_device_properties(c.device);
  const std::optional<GpuPeaks> peaks = c.datasheet ? c.datasheet : lookup_gpu_peaks(props.name);

  cudaStream_t stream = nullptr;
  REDLINE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::size_t free_at_start = 0, total = 0;
  REDLINE_CUDA_CHECK(cudaMemGetInfo(&free_at_start, &total));
  try {
    TrainStack stack(c.config, c.mbs, c.seq, c.recompute, c.attention, stream);
    const Batch batch = fixed_batch(c);
    stack.set_batch(batch.tokens, batch.targets);
    stack.set_gradient_accumulation(c.ga);
    const StepFigures figures = timed_steps(stack, c, stream, static_cast<std::int64_t>(free_at_start));
    std::string split_note;
    std::map<KernelCategory, double> split;
    std::optional<PartsAlone> alone;
    if (!f.no_split) {  // each costs about as much as the timed steps again
      split = category_ms(stack, c, stream, split_note);
      alone = parts_alone(stack, split_note);
    }
    Row row = result_row(c, figures, split, alone, stack.allocated(), peaks);
    row.note = split_note;
    print_trial_figures(row);
    report.rows.push_back(std::move(row));
  } catch (const std::exception& e) {
    if (!is_out_of_memory(e)) throw;
    // The batch-sweep engine reads this line as an out-of-memory trial.
    std::cerr << "CUDA out of memory: " << e.what() << "\n";
    return kExitCheckFailed;
  }
  (void)cudaStreamDestroy(stream);
  const Row& row = report.rows.front();
  report.summary.emplace_back("gpu", props.name + (peaks ? " (MFU against " + peaks->model + "'s dense bf16 peak)" : ""));
  report.summary.emplace_back("attention", c.attention == AttentionChoice::cudnn
                                               ? "cuDNN " + CudnnAttention::version() + ", fused"
                                               : std::string("unfused: cuBLASLt GEMMs and softmax kernels"));
  const bool fell = *row.metric_value("loss_last") < *row.metric_value("loss_first");
  report.summary.emplace_back("loss", metric_text(*row.metric_value("loss_first")) + " -> " +
                                          metric_text(*row.metric_value("loss_last")) + (fell ? " (falling)" : " (NOT falling)"));
  if (const auto ratio = row.metric_value("step_over_alone"))
    report.summary.emplace_back("step vs parts alone",
                                format_number(*ratio, 3) + "x the step's GEMM and attention calls timed alone "
                                                           "(target: at most 1.10); forward and backward alone: " +
                                    format_number(*row.metric_value("passes_over_alone"), 3) + "x");
  if (const auto bandwidth = row.metric_value("optimizer_GBps"))
    report.summary.emplace_back("optimizer", optimizer_line(*row.metric_value("optimizer_ms"),
                                                            *row.metric_value("step_time_ms"), *bandwidth, c.ga, peaks));
  add_reference_summary(report);
  write_reports(report, f.output);
  // Ctrl-C waits for the steps but ends the parts alone (the row's note says
  // so): the report keeps what was measured, and the exit says it was cut short.
  if (interrupted()) return kExitInterrupted;
  if (f.check && !fell) {
    std::cerr << "train_step_bench: FAILED: the loss did not fall over " << c.steps << " steps on a fixed batch\n";
    return kExitCheckFailed;
  }
  return kExitOk;
}

}  // namespace redline::train
