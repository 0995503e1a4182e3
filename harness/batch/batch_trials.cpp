#include "harness/batch/batch_trials.hpp"

#include <regex>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>

#include "harness/batch/case_config.hpp"
#include "harness/core/child_process.hpp"
#include "harness/core/units.hpp"
#include "harness/measure/stats.hpp"
#include "harness/measure/throughput_reading.hpp"
#include "harness/report/console_table.hpp"

namespace redline {
namespace {

constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();
constexpr double kMiB = 1024.0 * 1024.0, kGiB = kMiB * 1024.0;

MetricOptions metric_options(const BatchSweepOptions& options) {
  return {options.metric_regex, options.step_time_regex, options.step_time_unit, options.skip_steps};
}

}  // namespace

struct BatchTrials::Trial {
  ChildResult child;
  TrialVerdict verdict;
  std::optional<std::uint64_t> gpu_peak_bytes;
  std::string metric;                // the column its throughput goes to
  std::optional<double> throughput;  // ok trials only
  // One step's seconds, from the same figure as the throughput (see step_seconds_of).
  std::optional<double> step_seconds;
};

namespace {

// One step's seconds as the trial's throughput figure gives it, so that the
// row's step_time_ms and throughput never disagree: a printed step time as
// printed, one over a printed it/s, else batch / samples per second (for a
// trainer's samples/s, not the trial's wall time, which holds the start-up:
// 9,487 ms beside Hugging Face's 36.7 samples/s at batch 1). The wall time
// over --steps only when the throughput is the wall time's too. Nullopt when
// the figure is not in samples (tokens/s without --tokens-per-sample, a
// --metric-regex named other than samples_per_s): no step time follows.
std::optional<double> step_seconds_of(const std::optional<ThroughputReading>& reading, std::int64_t batch,
                                      std::optional<double> samples_per_s) {
  if (reading && reading->kind == ReadingKind::step_seconds) return reading->value;
  if (reading && reading->kind == ReadingKind::steps_per_s) return 1 / reading->value;
  if (!samples_per_s) return std::nullopt;
  return static_cast<double>(batch) / *samples_per_s;
}

}  // namespace

BatchTrials::BatchTrials(const BatchSweepOptions& options, Report& report)
    : options_(options),
      config_(config_params(options)),
      rules_(make_trial_rules(options.oom_regexes, metric_options(options))),
      progress_(options.progress),
      report_(report),
      nvml_(std::make_unique<NvmlSession>()),
      metric_name_(options.metric_name) {
  if (nvml_->unavailable()) {
    gpu_unavailable_ = *nvml_->unavailable();
    nvml_.reset();
  }
}

BatchTrials::~BatchTrials() = default;

PointOutcome BatchTrials::run_point(std::int64_t batch, bool from_bisect) {
  std::vector<double> throughputs;
  for (int r = 0; r < options_.repeats; ++r) {
    const Trial trial = run_trial(batch, r, from_bisect);
    if (trial.verdict.status != PointStatus::ok) return {trial.verdict.status, trial.verdict.note};
    if (trial.throughput) throughputs.push_back(*trial.throughput);
  }
  if (!throughputs.empty()) median_throughput_[batch] = summarize(throughputs).median;
  return {PointStatus::ok, ""};
}

BatchTrials::Trial BatchTrials::run_trial(std::int64_t batch, int repetition, bool from_bisect) {
  Trial trial;
  ChildSpec spec;
  spec.argv = substitute_batch(options_.command, batch);
  spec.extra_env = {{kBatchVariable, std::to_string(batch)}};
  if (options_.trial_environment)
    for (auto& variable : options_.trial_environment(batch, repetition)) spec.extra_env.push_back(std::move(variable));
  spec.timeout_seconds = options_.timeout_seconds;
  if (options_.echo_output) spec.on_output = [](std::string_view text) { std::cerr << text << std::flush; };
  if (nvml_)
    spec.on_sample = [&](const std::vector<int>& pids) {
      if (const auto used = nvml_->process_memory(pids))
        trial.gpu_peak_bytes = std::max(trial.gpu_peak_bytes.value_or(0), *used);
    };
  const int repeats = options_.repeats;
  progress_.line(
      "[trial " + std::to_string(++trials_run_) + "] batch " + std::to_string(batch) +
      (repeats > 1 ? " (repeat " + std::to_string(repetition + 1) + "/" + std::to_string(repeats) + ")" : "") +
      (from_bisect ? " [bisect]" : "") + " ...");
  trial.child = run_child(spec);
  trial.verdict = judge_trial(trial.child, rules_);
  measure_throughput(trial, batch);
  record(trial, batch, repetition, from_bisect);
  return trial;
}

// The trial's throughput and its column, in the order: --metric-regex as printed; the step time
// or rate the output gave, for this batch; batch x steps over the wall time.
std::optional<double> last_printed_number(const std::string& output, const std::string& pattern) {
  const std::regex re(pattern);
  std::optional<double> last;
  for (auto it = std::sregex_iterator(output.begin(), output.end(), re); it != std::sregex_iterator(); ++it)
    if (it->size() > 1)
      if (const auto number = printed_number((*it)[1].str()))  // else not a number: the figure stays unmeasured
        last = number;
  return last;
}

// A trial read another way than the sweep's first ok trial: its figure would
// not compare with theirs (a wall time holds the start-up a printed step time
// leaves out; two trainers' lines measure different spans). Nullopt when it
// is read the same way, or is the first.
std::optional<std::string> BatchTrials::other_source(const std::optional<ThroughputReading>& reading) const {
  const std::string source = reading ? reading->source : kWallTimeSource;
  if (!source_ || source_->source == source) return std::nullopt;
  const auto described = [](const std::string& s) {
    return s == kWallTimeSource ? std::string("the trial's wall time (no step time or throughput line recognised)") : s;
  };
  return "its throughput would come from " + described(source) + ", the earlier trials' from " +
         described(source_->source) + ": the two do not compare (give --step-time-regex or --metric-regex)";
}

void BatchTrials::measure_throughput(Trial& trial, std::int64_t batch) {
  if (trial.verdict.status != PointStatus::ok) return;
  const auto& reading = trial.verdict.reading;
  if (const auto why = other_source(reading)) {
    trial.verdict = {PointStatus::error, std::nullopt, *why};
    return;
  }
  std::string name = "samples_per_s";
  double value = 0;
  std::optional<double> samples;  // the throughput in samples/s, when it is one
  if (reading && reading->source == "--metric-regex") {
    name = options_.metric_name;
    value = reading->value;
    if (name == "samples_per_s") samples = value;
  } else if (reading) {
    samples = samples_per_second(*reading, batch, options_.tokens_per_sample);
    if (!samples) name = "tokens_per_s";
    value = samples.value_or(reading->value);
  } else {
    value = static_cast<double>(batch) * static_cast<double>(options_.steps) / trial.child.wall_seconds;
    samples = value;
  }
  // A finite step time can still give an infinite rate (batch / 1e-320 s): such a trial is an error,
  // as an unreadable metric is, so it never wins the sweep.
  if (!(std::isfinite(value) && value > 0)) {
    const std::string source = reading ? reading->source : "the wall time";
    trial.verdict = {PointStatus::error, std::nullopt,
                     source + " gives " + format_number(value, 2) + " " + name + " at batch " + std::to_string(batch) +
                         ": a throughput must be a finite positive number"};
    return;
  }
  note_source(reading);
  metric_name_ = name;  // one source a sweep: the same name every trial
  trial.metric = name;
  trial.throughput = value;
  trial.step_seconds = step_seconds_of(reading, batch, samples);
}

namespace {

// A trial's outcome as the row's status (a sweep point's statuses are a subset).
RowStatus row_status(PointStatus status) {
  switch (status) {
    case PointStatus::ok: return RowStatus::ok;
    case PointStatus::oom: return RowStatus::oom;
    case PointStatus::error: return RowStatus::error;
    case PointStatus::timeout: return RowStatus::timeout;
    case PointStatus::skipped: return RowStatus::skipped;
  }
  return RowStatus::error;
}

}  // namespace

void BatchTrials::record(const Trial& trial, std::int64_t batch, int repetition, bool from_bisect) {
  Row row;
  row.param("batch_size", std::to_string(batch));
  for (const auto& [name, value] : config_) row.param(name, value);
  row.repetition = repetition;
  row.status = row_status(trial.verdict.status);
  const bool ok = trial.verdict.status == PointStatus::ok;
  row.note = ok ? (from_bisect ? "bisect" : "") : trial.verdict.note;
  const std::string metric = ok ? trial.metric : metric_name_;
  row.metric(metric, trial.throughput.value_or(kNotMeasured));
  if (options_.tokens_per_sample && metric == "samples_per_s")
    row.metric("tokens_per_s", trial.throughput ? *trial.throughput * *options_.tokens_per_sample : kNotMeasured);
  const double wall = trial.child.wall_seconds;
  row.metric("step_time_ms", ok && trial.step_seconds ? 1e3 * *trial.step_seconds : kNotMeasured);
  row.metric("trial_time_s", ok ? wall : kNotMeasured);
  const auto& rss = trial.child.peak_rss_bytes;
  row.metric("peak_rss_MiB", rss ? static_cast<double>(*rss) / kMiB : kNotMeasured);
  if (trial.gpu_peak_bytes) row.metric("peak_mem_GiB", static_cast<double>(*trial.gpu_peak_bytes) / kGiB);
  for (const auto& [name, pattern] : options_.extra_metrics)
    row.metric(name, last_printed_number(trial.child.output, pattern).value_or(kNotMeasured));
  if (options_.trial_ended) options_.trial_ended(row, batch, repetition);
  report_.rows.push_back(row);

  // Memory says where the limit is only for trials that fit or ran out of it.
  if (ok || trial.verdict.status == PointStatus::oom) {
    if (rss) host_memory_.push_back({batch, static_cast<double>(*rss), ok});
    if (trial.gpu_peak_bytes) gpu_memory_.push_back({batch, static_cast<double>(*trial.gpu_peak_bytes), ok});
    gpu_measured_ = gpu_measured_ || (trial.gpu_peak_bytes && *trial.gpu_peak_bytes > 0);
  }
  progress_.line("  -> " + to_string(row.status) +
                 (ok ? ": " + human_number(*trial.throughput) + " " + metric : ": " + trial.verdict.note) +
                 (rss ? ", peak RSS " + format_size(*rss) : "") + " (" + format_number(wall, 1) + " s)");
}

void BatchTrials::note_source(const std::optional<ThroughputReading>& reading) {
  if (!source_)
    source_ = reading ? ThroughputSourceUse{reading->source, reading->kind}
                      : ThroughputSourceUse{kWallTimeSource, ReadingKind::samples_per_s};
  ++source_->trials;
  source_->readings = reading ? reading->readings : 0;
  source_->skipped = reading ? reading->skipped : 0;
}

std::vector<MemoryPoint> BatchTrials::memory_points() const { return gpu_measured_ ? gpu_memory_ : host_memory_; }

std::optional<std::int64_t> BatchTrials::predict_largest_fit() {
  const std::vector<MemoryPoint> points = memory_points();
  const auto batch = predict_max_batch(points);
  if (!batch) return std::nullopt;
  Prediction prediction{*batch, *fit_memory(points), 0, 0};
  for (const auto& p : points)
    if (!p.fit && p.bytes > prediction.reached_bytes)
      prediction.reached_bytes = p.bytes, prediction.reached_at = p.batch;
  prediction_ = prediction;
  return batch;
}

void BatchTrials::rename_metric_in_rows() {
  if (metric_name_ == options_.metric_name) return;
  for (Row& row : report_.rows)
    for (auto& [name, value] : row.metrics)
      if (name == options_.metric_name && std::isnan(value)) name = metric_name_;
}

}  // namespace redline
