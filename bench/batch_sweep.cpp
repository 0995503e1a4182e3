// batch_sweep -- COMMAND [ARGS...]: sweeps a training command over batch
// sizes to find the largest that fits and where throughput saturates.
#include <algorithm>
#include <iostream>
#include <optional>
#include <regex>
#include <set>

#include "bench/profile/trial_profiler.hpp"
#include "bench/tool_columns.hpp"
#include "harness/batch/batch_sweep.hpp"
#include "harness/core/axis.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/measure/accumulation.hpp"
#include "harness/measure/trial.hpp"
#include "harness/report/schema_document.hpp"
#include "harness/report/tool_main.hpp"
#include "harness/tracking/sweep_charts.hpp"

using namespace redline;

namespace {

// Far above any context length (millions of tokens): a larger value is a slip, and one near the
// double's range (1e308) made the tokens_per_s column infinite.
constexpr double kMaxTokensPerSample = 1e9;

struct Flags {
  std::string start = "1", max = "4096", factor = "2", batch_sizes;
  std::string repeats = "1", plateau = "5", fraction = "90", safety_margin = "0";
  std::string timeout = "1800", steps = "1";
  std::string metric_regex, metric_name = "samples_per_s";
  std::string step_time_regex, step_time_unit = "ms", skip_steps = "1", tokens_per_sample;
  std::vector<std::string> oom_regexes;
  std::set<std::string> given;  // the flags typed, filled after parsing
  std::string global_batch, data_parallel = "1";
  bool bisect = false, verbose = false, profile = false;
  OutputOptions output;
};

// Names the CSV already uses, or that JSON readers would take for a time.
void check_metric_name(const std::string& name) {
  static const std::regex valid("[A-Za-z][A-Za-z0-9_]*");
  static const std::regex time_like(".*time_(ns|us|ms|s)$");
  static const std::set<std::string> taken = {
      "batch_size", "program", "config", "step_time_ms", "trial_time_s", "gain_pct", "peak_rss_MiB", "peak_mem_GiB",
      "status",     "note",    "run_id", "timestamp_utc", "host",       "gpu",      "tool",         "case_key",
      "repetition"};
  if (!std::regex_match(name, valid))
    throw UsageError("--metric-name", name, "must be a letter followed by letters, digits or _");
  if (taken.count(name)) throw UsageError("--metric-name", name, "is already a column of batch_sweep's report");
  if (name.size() < 7 || name.compare(name.size() - 6, 6, "_per_s") != 0)
    throw UsageError("--metric-name", name, "name a throughput <what>_per_s (e.g. tokens_per_s), so comparisons know higher is better");
  if (std::regex_match(name, time_like))
    throw UsageError("--metric-name", name, "looks like a time (*time_us); name the throughput, e.g. tokens_per_s");
}

double percent(const char* flag, const std::string& text, double lo, double hi) {
  const double value = parse_number(flag, text);
  require_in_range(flag, text, value, lo, hi);
  return value / 100.0;
}

// The step-time form and what --metric-name may rename: only
// --metric-regex's value; the other forms give samples_per_s.
void set_step_time_options(const Flags& f, BatchSweepOptions& o) {
  o.step_time_regex = f.step_time_regex;
  o.step_time_unit = f.step_time_unit;
  o.skip_steps = static_cast<int>(parse_count_between("--skip-steps", f.skip_steps, 0, 1'000'000));
  if (f.metric_name != "samples_per_s" && f.metric_regex.empty())
    throw UsageError("--metric-name", f.metric_name,
                     "names --metric-regex's value; a step time or a trainer's line gives samples_per_s");
  if (!f.tokens_per_sample.empty()) {
    o.tokens_per_sample = parse_number("--tokens-per-sample", f.tokens_per_sample);
    require_positive("--tokens-per-sample", f.tokens_per_sample, *o.tokens_per_sample);
    if (*o.tokens_per_sample > kMaxTokensPerSample)
      throw UsageError("--tokens-per-sample", f.tokens_per_sample,
                       "must be at most " + format_general(kMaxTokensPerSample, 15) + " tokens in one sample");
    if (f.metric_name != "samples_per_s")
      throw UsageError("--tokens-per-sample", f.tokens_per_sample,
                       "turns samples/s into tokens/s; --metric-name " + f.metric_name + " is not samples/s");
  }
  // The regexes and the unit are checked with the trial rules, before any trial.
  make_trial_rules({}, {o.metric_regex, o.step_time_regex, o.step_time_unit, o.skip_steps});
}

// --start, --max and --factor shape the upward search, which --batch-sizes replaces: given with it
// they would do nothing while the user believes they did.
void refuse_search_flags_with_axis(const Flags& f) {
  const std::pair<const char*, const std::string*> search_flags[] = {
      {"--start", &f.start}, {"--max", &f.max}, {"--factor", &f.factor}};
  for (const auto& [flag, value] : search_flags)
    if (f.given.count(flag))
      throw UsageError(flag, *value,
                       "does nothing with --batch-sizes, which lists every batch size: give one or the other");
}

BatchSweepOptions to_options(const Flags& f, std::vector<std::string> command) {
  BatchSweepOptions o;
  o.command = std::move(command);
  if (!f.batch_sizes.empty()) {
    refuse_search_flags_with_axis(f);
    o.axis = parse_count_axis_between("--batch-sizes", f.batch_sizes, 1, kMaxBatch);
  } else {
    const auto start = parse_count_between("--start", f.start, 1, kMaxBatch);
    const auto max = parse_count_between("--max", f.max, 1, kMaxBatch);
    if (max < start) throw UsageError("--max", f.max, "must be at least --start (" + f.start + ")");
    const double factor = parse_number("--factor", f.factor);
    if (!(factor > 1.0)) throw UsageError("--factor", f.factor, "must be greater than 1");
    o.axis = geometric_axis(start, max, factor);
    if (o.axis.back() < max && static_cast<double>(o.axis.back()) * factor <= static_cast<double>(max))
      throw UsageError("--factor", f.factor, "gives too many batch sizes between --start and --max");
  }
  if (o.axis.back() > kMaxBatch) throw UsageError("--batch-sizes", f.batch_sizes, "has a batch size above 2^40");
  o.sweep.bisect = f.bisect;
  o.sweep.safety_margin = percent("--safety-margin", f.safety_margin, 0, 90);
  o.saturation.plateau_gain = percent("--plateau", f.plateau, 0, 100);
  o.saturation.fraction_of_best = percent("--fraction", f.fraction, 1, 100);
  o.repeats = static_cast<int>(parse_count_between("--repeats", f.repeats, 1, 1000));
  o.timeout_seconds = parse_number("--timeout", f.timeout);
  require_positive("--timeout", f.timeout, o.timeout_seconds);
  o.steps = parse_count_between("--steps", f.steps, 1, 1'000'000'000);
  o.metric_regex = f.metric_regex;
  check_metric_name(f.metric_name);
  o.metric_name = f.metric_name;
  set_step_time_options(f, o);
  o.oom_regexes = f.oom_regexes;
  o.data_parallel = parse_count_between("--data-parallel", f.data_parallel, 1, kMaxDataParallel);
  // Its one use is the accumulation plan: alone it would be silently ignored.
  if (f.given.count("--data-parallel") && f.global_batch.empty())
    throw UsageError("--data-parallel", f.data_parallel, "does nothing without --global-batch, the plan it is for");
  if (!f.global_batch.empty()) {
    o.global_batch = parse_count_between("--global-batch", f.global_batch, 1, kMaxBatch);
    plan_accumulation(*o.global_batch, o.data_parallel, 1);  // rejects an impossible plan before any trial
  }
  o.echo_output = f.verbose;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  // Everything after the first "--" is the training command, untouched.
  std::vector<std::string> command;
  int own_argc = argc;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      command.assign(argv + i + 1, argv + argc);
      own_argc = i;
      break;
    }

  Flags f;
  CLI::App app{"Sweeps a training command over batch sizes: the largest batch that fits, where throughput "
               "saturates, and the batch to use. Each trial is a child process; {bs} in ARGS becomes the "
               "batch size and REDLINE_BATCH_SIZE is set.\n\nUsage: batch_sweep [OPTIONS] -- COMMAND [ARGS...]",
               "batch_sweep"};
  app.footer(columns_help(tool_declaration("batch_sweep")));
  app.add_option("--start", f.start, "Smallest batch size (default 1)");
  app.add_option("--max", f.max, "Largest batch size to try (default 4096)");
  app.add_option("--factor", f.factor, "Growth factor of the upward search (default 2)");
  app.add_option("--batch-sizes", f.batch_sizes, "Explicit axis instead: 1,2,4 or 8:64 (step 1) or 8:64:8 or 1:512:x2")->type_name("AXIS");
  app.add_flag("--bisect", f.bisect, "After the first OOM, bisect to the exact maximum batch");
  app.add_option("--repeats", f.repeats, "Trials per batch size; the median counts (default 1)");
  app.add_option("--plateau", f.plateau, "Saturation: the smallest batch no larger one beats by more than PCT % (default 5)")->type_name("PCT");
  app.add_option("--fraction", f.fraction, "Also report the smallest batch reaching PCT % of the best (default 90)")->type_name("PCT");
  app.add_option("--safety-margin", f.safety_margin, "Keep PCT % below the max feasible batch (default 0)")->type_name("PCT");
  app.add_option("--timeout", f.timeout, "Seconds per trial before it is killed (default 1800)");
  app.add_option("--steps", f.steps, "Training steps one trial runs, for samples/s from wall time (default 1)");
  app.add_option("--metric-regex", f.metric_regex, "Throughput from the output: first group of the last match (default: a step time or throughput line of Hugging Face, Lightning, Megatron-LM, torchtitan, DeepSpeed or nanoGPT, else wall time)")->type_name("REGEX");
  app.add_option("--metric-name", f.metric_name, "Column name of --metric-regex's throughput (default samples_per_s)");
  app.add_option("--step-time-regex", f.step_time_regex, "Step time from the output: first group; samples/s = batch / median step time")->type_name("REGEX");
  app.add_option("--step-time-unit", f.step_time_unit, "Unit of --step-time-regex's number: s, ms or us (default ms)");
  app.add_option("--skip-steps", f.skip_steps, "Step lines dropped first: compilation and warm-up (default 1)")->type_name("K");
  app.add_option("--tokens-per-sample", f.tokens_per_sample, "Adds tokens_per_s = samples/s x N (and reads a trainer's tokens/s as samples/s)")->type_name("N");
  app.add_option("--oom-regex", f.oom_regexes, "Extra pattern that marks an OOM (repeatable)")->type_name("REGEX");
  app.add_option("--global-batch", f.global_batch, "Global batch size, to plan gradient accumulation");
  app.add_option("--data-parallel", f.data_parallel, "Data-parallel degree for --global-batch (default 1)");
  app.add_flag("--verbose", f.verbose, "Echo each trial's output to stderr");
  app.add_flag("--profile", f.profile,
               "Profile each trial (CUPTI): its GPU busy and idle %, the top category, and why saturation is where "
               "it is (docs/profile.md)");
  add_output_flags(app, f.output);

  return run_tool(app, own_argc, argv, [&] {
    f.given = flags_given(app);
    BatchSweepOptions options = to_options(f, command);
    validate_output_paths(f.output);
    // NVML only: creating a CUDA context here would take GPU memory from the trials.
    Environment env = capture_environment();
    std::optional<profile::TrialProfiler> profiler;
    if (f.profile) profiler.emplace(env), profiler->watch(options);
    BatchSweepOutcome outcome = run_batch_sweep("batch_sweep", options, std::move(env));
    if (profiler) profiler->summarize(outcome);
    add_sweep_charts(outcome.report);  // for its JSON, as `redline report` draws them
    write_reports(outcome.report, f.output);
    if (interrupted()) return 128 + interrupt_signal();
    return outcome.any_ok ? kExitOk : kExitCheckFailed;
  });
}
