#include "bench/profile/trial_profiler.hpp"

#include <unistd.h>

#include "bench/profile/profile_launch.hpp"
#include "harness/profile/device_choice.hpp"
#include "harness/profile/trace_file.hpp"
#include "harness/profile/trial_profile.hpp"

namespace redline::profile {
namespace fs = std::filesystem;

namespace {

// The first step of a trial builds, loads and tunes: like every later
// step's figure, this one skips it.
constexpr std::size_t kWarmupSteps = 1;

}  // namespace

TrialProfiler::TrialProfiler(const Environment& env)
    : library_(require_profiling_here(env)),
      folder_(fs::temp_directory_path() / ("redline_trials." + std::to_string(::getpid()))) {
  fs::create_directories(folder_);
}

TrialProfiler::~TrialProfiler() {
  std::error_code ec;
  fs::remove_all(folder_, ec);
}

fs::path TrialProfiler::trace_of(std::int64_t batch, int repetition) const {
  return folder_ / ("batch" + std::to_string(batch) + "." + std::to_string(repetition) + ".trace");
}

void TrialProfiler::watch(BatchSweepOptions& options) {
  options.profiled = true;
  options.trial_environment = [this](std::int64_t batch, int repetition) {
    return profiling_environment(library_, trace_of(batch, repetition));
  };
  options.trial_ended = [this](Row& row, std::int64_t batch, int repetition) {
    const fs::path trace = trace_of(batch, repetition);
    std::error_code ec;
    if (!fs::exists(trace, ec)) return add_trial_profile(row, std::nullopt, "the trial wrote no trace");
    try {
      Trace read = read_trace(trace);
      keep_one_device(read, std::nullopt);  // several GPUs' union would say "some GPU was busy"
      add_trial_profile(row, profile_trial(read, kWarmupSteps), "no step after the first was found");
    } catch (const std::exception& e) {
      add_trial_profile(row, std::nullopt, e.what());
    }
    fs::remove(trace, ec);
  };
}

void TrialProfiler::summarize(BatchSweepOutcome& outcome) const {
  if (!outcome.saturation_batch) return;
  if (const auto line = idle_around_saturation(outcome.report.rows, *outcome.saturation_batch))
    outcome.report.summary.emplace_back("why_saturation", *line);
}

}  // namespace redline::profile
