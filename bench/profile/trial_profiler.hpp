// batch_sweep --profile: every trial runs under the profiler, each its own
// trace in a temporary folder; once a trial ends its steps' GPU busy and
// idle shares and top category go on its row, and the trace is removed.
#pragma once

#include <filesystem>
#include <memory>

#include "harness/batch/batch_sweep.hpp"

namespace redline::profile {

class TrialProfiler {
 public:
  // Throws CannotRun when nothing can be profiled here.
  explicit TrialProfiler(const Environment& env);
  ~TrialProfiler();
  TrialProfiler(const TrialProfiler&) = delete;
  TrialProfiler& operator=(const TrialProfiler&) = delete;

  // Sets the options' trial hooks; the profiler must outlive the sweep.
  void watch(BatchSweepOptions& options);
  // The summary line of why saturation is where it is, when it can be said.
  void summarize(BatchSweepOutcome& outcome) const;

 private:
  std::filesystem::path trace_of(std::int64_t batch, int repetition) const;
  std::filesystem::path library_, folder_;
};

}  // namespace redline::profile
