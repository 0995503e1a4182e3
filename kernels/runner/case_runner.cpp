// CaseRunner: one Google Benchmark case per GpuCase, each set up, verified,
// timed and described in that order (kernels/runner/gpu_case.hpp), its failures
// turned into statuses.
#include "kernels/runner/case_runner.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "harness/report/gbench_batch.hpp"
#include "harness/report/gbench_rows.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/nvtx_range.cuh"
#include "kernels/runner/sample_timer.hpp"

namespace redline {

std::string case_name(const CaseKey& key) { return gbench_case_name(key.family, key.params); }

std::string failure_status_text(const std::exception& e) {
  if (dynamic_cast<const CaseSkipped*>(&e)) return std::string("skipped: ") + e.what();
  // cuBLASLt's own allocations (workspace, plans) fail as ALLOC_FAILED: oom too.
  if (is_out_of_memory(e)) return std::string("oom: ") + e.what();
  return std::string("error: ") + e.what();
}

namespace {

// A case's figure and what was read around it.
struct TimedCase {
  TimedSamples samples;
  ClockReadings clocks;
  bool complete() const {
    return samples.measurement.stop != StopReason::interrupted && !samples.measurement.samples.empty();
  }
};

}  // namespace

struct CaseRunner::State {
  CaseRunnerOptions options;
  RowCollector collector;
  const Progress& progress;
  DeviceProperties device;
  NvmlSession nvml;
  cudaStream_t stream = nullptr;
  // Created once the device is current: its flags and events belong to it.
  std::unique_ptr<SampleTimer> timer;
  bool warmed_up = false;  // the first case's long warm-up has run
  std::optional<MeasurementPolicy> policy_override;  // for the cases of one run()
  std::vector<FailedCheck> failed_checks;            // of one run(), in the order the cases ran

  State(CaseRunnerOptions o, const std::vector<benchmark::BenchmarkReporter*>& forwards, const Progress& p)
      : options(std::move(o)), progress(p), device(query_device_properties(options.device)) {
    for (auto* forward : forwards) collector.add_forward(forward);
    REDLINE_CUDA_CHECK(cudaSetDevice(options.device));
    REDLINE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    try {
      timer = std::make_unique<SampleTimer>(stream, options.sample_seconds);
    } catch (...) {
      (void)cudaStreamDestroy(stream);
      throw;
    }
  }
  ~State() {
    timer.reset();
    (void)cudaStreamDestroy(stream);
  }

  // The policy of the next case to need one: the first warms up longest.
  MeasurementPolicy next_case_policy() {
    MeasurementPolicy policy = policy_override.value_or(options.policy);
    if (!warmed_up) policy.warmup_seconds = std::max(policy.warmup_seconds, options.first_warmup_seconds);
    warmed_up = true;
    return policy;
  }

  void measure(benchmark::State& state, const GpuCase& gpu_case);
  TimedCase time_case(PreparedCase& prepared, const MeasurementPolicy& policy);
  void report(benchmark::State& state, const std::string& name, const PreparedCase& prepared, const CaseCheck& check,
              const TimedCase& timed, const MeasurementPolicy& policy);
};

namespace {

// The runner as one case's set-up sees it. The case's policy is fixed when it
// is first needed (a variant's timing, or the timed samples), so a case whose
// set-up fails leaves the long first warm-up to the next one.
class RunningCase final : public CaseSetUp {
 public:
  RunningCase(cudaStream_t stream, const DeviceProperties& device, SampleTimer& timer,
              std::function<MeasurementPolicy()> next_case_policy)
      : stream_(stream), device_(device), timer_(timer), next_case_policy_(std::move(next_case_policy)) {}

  cudaStream_t stream() const override { return stream_; }
  const DeviceProperties& device() const override { return device_; }

  Measurement time_variant(const std::function<void(int)>& enqueue) override {
    MeasurementPolicy quick = policy();
    quick.min_repetitions = 3;
    quick.max_repetitions = 10;
    quick.max_seconds = 0.5;
    if (variants_timed_++ > 0) quick.warmup_seconds = std::min(quick.warmup_seconds, 0.05);
    return timer_.time(quick, enqueue).measurement;
  }

  const MeasurementPolicy& policy() {
    if (!policy_) policy_ = next_case_policy_();
    return *policy_;
  }

 private:
  cudaStream_t stream_;
  const DeviceProperties& device_;
  SampleTimer& timer_;
  std::function<MeasurementPolicy()> next_case_policy_;
  std::optional<MeasurementPolicy> policy_;
  int variants_timed_ = 0;
};

}  // namespace

void CaseRunner::State::measure(benchmark::State& state, const GpuCase& gpu_case) {
  const std::string name = case_name(gpu_case.key());
  const NvtxRange range(name.c_str());
  try {
    RunningCase running(stream, device, *timer, [this] { return next_case_policy(); });
    const std::unique_ptr<PreparedCase> prepared = [&] {
      const NvtxRange set_up_range("set-up");
      return gpu_case.set_up(running);
    }();
    const CaseCheck check = [&] {
      const NvtxRange verify_range("verify");
      return prepared->verify(stream);
    }();
    if (!check.passed) {
      failed_checks.push_back({gpu_case.key().params, check.figures});
      progress.line(name + ": WRONG (" + check.failure + ")");
      state.SkipWithError(("wrong: verification failed: " + check.failure).c_str());
      return;
    }
    const MeasurementPolicy policy = running.policy();
    const TimedCase timed = time_case(*prepared, policy);
    if (!timed.complete()) {
      state.SkipWithError("skipped: interrupted");
      return;
    }
    report(state, name, *prepared, check, timed, policy);
  } catch (const std::exception& e) {
    const std::string status = failure_status_text(e);
    progress.line(name + ": " + status);
    state.SkipWithError(status.c_str());
  }
}

TimedCase CaseRunner::State::time_case(PreparedCase& prepared, const MeasurementPolicy& policy) {
  TimedCase timed;
  timed.clocks.before = nvml.read(device.uuid);
  {
    const NvtxRange timed_range("timed");
    timed.samples = timer->time(
        policy, [&](int iteration) { prepared.enqueue(stream, iteration); },
        [&] { return nvml.read(device.uuid); });
  }
  timed.clocks.after = nvml.read(device.uuid);
  timed.clocks.during = timed.samples.clocks;
  return timed;
}

void CaseRunner::State::report(benchmark::State& state, const std::string& name, const PreparedCase& prepared,
                               const CaseCheck& check, const TimedCase& timed, const MeasurementPolicy& policy) {
  const Measurement& m = timed.samples.measurement;
  for (auto _ : state) state.SetIterationTime(m.summary.median);
  const CaseWork work = prepared.work();
  CaseRow row;
  add_rates(row, work, m.summary.median);
  add_spread(row, m);
  row.counter("wrong", 0);  // verified before it was timed
  for (const auto& [figure, value] : check.figures) row.counter(figure, value);  // how close it came
  prepared.describe(row);
  add_noise_note(row, m, policy);
  add_clock_readings(row, timed.clocks);
  for (const auto& [counter, value] : row.counters()) state.counters[counter] = value;
  state.SetLabel(row.note_text());
  progress.line(name + ": " + rate_text(work, m.summary.median));
}

CaseRunner::CaseRunner(CaseRunnerOptions options, const std::vector<benchmark::BenchmarkReporter*>& forwards,
                       const Progress& progress)
    : state_(std::make_unique<State>(std::move(options), forwards, progress)) {}

CaseRunner::~CaseRunner() = default;

const DeviceProperties& CaseRunner::device() const { return state_->device; }

std::vector<Row> CaseRunner::run(const std::vector<std::unique_ptr<GpuCase>>& cases,
                                 const std::optional<MeasurementPolicy>& policy) {
  // For these cases only, whichever way run() ends.
  state_->policy_override = policy;
  struct Reset {
    std::optional<MeasurementPolicy>& override;
    ~Reset() { override.reset(); }
  } reset{state_->policy_override};
  std::vector<GbenchCase> batch;
  for (const auto& gpu_case : cases)
    batch.push_back({case_name(gpu_case->key()), [this, &gpu_case](benchmark::State& st) {
                       state_->measure(st, *gpu_case);
                     }});
  state_->failed_checks.clear();
  std::vector<Row> rows = run_gbench_batch(state_->collector, batch, state_->options.repetitions);
  add_failed_check_figures(rows, state_->failed_checks);
  return rows;
}

void CaseRunner::finish() { state_->collector.finish(); }

}  // namespace redline
