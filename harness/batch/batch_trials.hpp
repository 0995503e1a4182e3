// The batch sweep's trials: one child process per trial, judged (ok, oom,
// error, timeout), measured (throughput, peak memory of its process tree and,
// where NVML can tell, of its GPU memory) and recorded as a row.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/batch/batch_sweep.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/progress.hpp"
#include "harness/measure/memory_fit.hpp"
#include "harness/measure/trial.hpp"

namespace redline {

// The number in the first group of the last match of `pattern` in
// `output`; nullopt when nothing matches. Throws std::regex_error for a bad
// pattern.
std::optional<double> last_printed_number(const std::string& output, const std::string& pattern);

// Where the throughput of the sweep's ok trials came from, and how often: one
// source a sweep, set by its first ok trial, so that every figure compares
// with every other.
inline constexpr const char* kWallTimeSource = "wall time";

struct ThroughputSourceUse {
  std::string source;  // "--metric-regex", "--step-time-regex", a trainer line's name, or kWallTimeSource
  ReadingKind kind = ReadingKind::samples_per_s;
  int trials = 0;
  int skipped = 0;  // lines dropped by --skip-steps, in the last such trial
  int readings = 0;
};

class BatchTrials {
 public:
  BatchTrials(const BatchSweepOptions& options, Report& report);
  ~BatchTrials();

  // The sweep's point function: `repeats` trials of one batch size, a row
  // each, stopping at the first that is not ok.
  PointOutcome run_point(std::int64_t batch, bool from_bisect);

  // The largest batch the memory of the trials so far predicts to fit, and
  // what it was predicted from (kept for the summary).
  struct Prediction {
    std::int64_t batch = 0;
    MemoryFit fit;
    double reached_bytes = 0;     // the most an OOM trial reached
    std::int64_t reached_at = 0;  // at this batch
  };
  std::optional<std::int64_t> predict_largest_fit();
  const std::optional<Prediction>& prediction() const { return prediction_; }

  // The median throughput of every batch size that ran ok.
  const std::map<std::int64_t, double>& median_throughput() const { return median_throughput_; }
  // The throughput's column: the options' metric name, or tokens_per_s for a
  // trainer that prints tokens/s when no --tokens-per-sample converts it.
  const std::string& metric_name() const { return metric_name_; }
  // Empty until a trial ran ok.
  const std::optional<ThroughputSourceUse>& source() const { return source_; }
  // Every trial's peak memory: its GPU memory when NVML measured any trial's,
  // else its process tree's host RSS.
  std::vector<MemoryPoint> memory_points() const;
  bool gpu_memory_measured() const { return gpu_measured_; }
  // Why NVML could not measure GPU memory (empty when it could).
  const std::string& gpu_memory_unavailable() const { return gpu_unavailable_; }

  // Rows made before the metric's name was known take it.
  void rename_metric_in_rows();

 private:
  struct Trial;
  Trial run_trial(std::int64_t batch, int repetition, bool from_bisect);
  void measure_throughput(Trial& trial, std::int64_t batch);
  void record(const Trial& trial, std::int64_t batch, int repetition, bool from_bisect);
  std::optional<std::string> other_source(const std::optional<ThroughputReading>& reading) const;
  void note_source(const std::optional<ThroughputReading>& reading);

  const BatchSweepOptions& options_;
  const std::vector<std::pair<std::string, std::string>> config_;  // the case key's program and config
  const TrialRules rules_;
  const Progress progress_;
  Report& report_;
  std::unique_ptr<NvmlSession> nvml_;
  std::string metric_name_;
  std::map<std::int64_t, double> median_throughput_;
  std::optional<ThroughputSourceUse> source_;
  std::vector<MemoryPoint> host_memory_, gpu_memory_;
  std::optional<Prediction> prediction_;
  bool gpu_measured_ = false;
  std::string gpu_unavailable_;
  int trials_run_ = 0;
};

}  // namespace redline
