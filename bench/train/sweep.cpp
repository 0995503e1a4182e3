// train_step_bench sweep: per recompute mode, the micro-batch sweep through
// the harness's batch-sweep engine, each trial a fresh `train_step_bench run`
// child process (an OOM never poisons the next trial): the largest batch that
// fits (bisected), the saturation batch and the best tokens/s, with the
// predicted and the measured peak memory per trial; then the verdict.
#include <filesystem>
#include <string>
#include <vector>

#include "bench/train/step_flags.hpp"
#include "bench/train/subcommands.hpp"
#include "harness/batch/batch_sweep.hpp"
#include "harness/core/axis.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/output.hpp"
#include "harness/tracking/references.hpp"
#include "harness/train/recompute_verdict.hpp"
#include "harness/train/sweep_report.hpp"
#include "harness/train/trial_figures.hpp"

namespace redline::train {
namespace fs = std::filesystem;

namespace {

// The child's command line: the same model, one micro-batch size ({bs}),
// --no-split (the sweep reads throughput and memory, not the kernel split).
std::vector<std::string> trial_command(const SweepFlags& f, const CheckedSweep& c, const std::string& self,
                                       Recompute mode) {
  std::vector<std::string> cmd = {self, "run"};
  const auto add = [&](const char* flag, const std::string& value) {
    if (!value.empty()) cmd.insert(cmd.end(), {flag, value});
  };
  add("--preset", f.model.preset);
  add("--hidden", f.model.hidden);
  add("--heads", f.model.heads);
  add("--kv-heads", f.model.kv_heads);
  add("--ffn", f.model.ffn);
  add("--layers", f.model.layers);
  add("--vocab", f.model.vocab);
  add("--seq", std::to_string(c.seq));
  cmd.insert(cmd.end(), {"--mbs", kBatchPlaceholder, "--recompute", recompute_name(mode), "--attention",
                         attention_choice_name(c.attention), "--steps", std::to_string(c.steps), "--warmup",
                         std::to_string(c.warmup), "--device", std::to_string(c.device), "--no-split"});
  add("--gpu", f.gpu);
  return cmd;
}

BatchSweepOptions mode_options(const SweepFlags& f, const CheckedSweep& c, const std::string& self, Recompute mode) {
  BatchSweepOptions o;
  o.command = trial_command(f, c, self, mode);
  o.axis = geometric_axis(1, c.max_mbs, 2);
  // --max-mbs is the largest tried, power of two or not (1000: after 512).
  if (o.axis.back() != c.max_mbs) o.axis.push_back(c.max_mbs);
  o.sweep.bisect = true;
  // run prints these lines (harness/train/trial_figures.hpp); the first,
  // tokens/s, is the throughput.
  o.metric_name = kTrialFigures.front();
  o.metric_regex = trial_figure_pattern(o.metric_name);
  for (const char* name : kTrialFigures)
    if (name != o.metric_name) o.extra_metrics.push_back({name, trial_figure_pattern(name)});
  if (c.gpu_memory_bytes) {
    const ModelConfig config = c.config;
    const std::int64_t seq = c.seq, memory = *c.gpu_memory_bytes;
    const AttentionChoice attention = c.attention;
    o.sweep.predict_largest_fit = [config, seq, mode, memory, attention]() -> std::optional<std::int64_t> {
      const std::int64_t fits = max_fitting_mbs(config, seq, mode, memory, attention);
      if (fits < 1) return std::nullopt;
      return fits;
    };
  }
  return o;
}

}  // namespace

int run_sweep(const SweepFlags& f, const std::string& self) {
  const CheckedSweep c = checked_sweep(f);
  validate_output_paths(f.output);
  require_training_gpu(c.device);
  // Each trial runs this very binary: /proc/self/exe, not argv[0], which a
  // shell's PATH lookup leaves without a folder.
  std::error_code no_proc;
  const fs::path exe = fs::read_symlink("/proc/self/exe", no_proc);
  const std::string program = no_proc ? fs::absolute(self).string() : exe.string();

  Report report = start_report("train_step_bench", capture_environment());
  std::vector<ModeSweep> modes;
  for (Recompute mode : c.modes) {
    if (interrupted()) break;
    BatchSweepOutcome outcome = run_batch_sweep("train_step_bench", mode_options(f, c, program, mode), report.env);
    modes.push_back(add_mode_to_report(report, mode, std::move(outcome.report.rows), outcome.report.summary,
                                       outcome.sweep.largest_fit, c.seq));
  }
  for (auto& line : recompute_verdict(modes)) report.summary.push_back(std::move(line));
  add_reference_summary(report);
  write_reports(report, f.output);
  return interrupted() ? kExitInterrupted : kExitOk;
}

}  // namespace redline::train
