#include "bench/gemm_runner.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "harness/core/clock.hpp"
#include "harness/gemm/gemm_model.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/units.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"
#include "kernels/event_timer.cuh"
#include "kernels/gemm_lt.cuh"
#include "kernels/kernel_trace.cuh"
#include "kernels/nvtx_range.cuh"
#include "kernels/random_fill.cuh"
#include "kernels/roofline.cuh"
#include "kernels/stream_blocker.cuh"

namespace redline {

struct GemmRunner::State {
  GemmRunnerOptions options;
  RowCollector collector;
  const Progress& progress;
  DeviceProperties device;
  NvmlSession nvml;
  cudaStream_t stream = nullptr;
  // Created once the device is current: its flags and event belong to it.
  std::unique_ptr<StreamBlocker> blocker;
  bool warmed_up = false;  // the first case's long warm-up has run
  std::optional<MeasurementPolicy> policy_override;  // for the cases of one run()

  State(GemmRunnerOptions o, const std::vector<benchmark::BenchmarkReporter*>& forwards, const Progress& p)
      : options(std::move(o)), progress(p), device(query_device_properties(options.device)) {
    for (auto* forward : forwards) collector.add_forward(forward);
    REDLINE_CUDA_CHECK(cudaSetDevice(options.device));
    blocker = std::make_unique<StreamBlocker>();
    REDLINE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  ~State() {
    blocker.reset();
    (void)cudaStreamDestroy(stream);
  }

  MeasurementPolicy policy_for_this_case() {
    MeasurementPolicy policy = policy_override.value_or(options.policy);
    if (!warmed_up) policy.warmup_seconds = std::max(policy.warmup_seconds, options.first_warmup_seconds);
    warmed_up = true;
    return policy;
  }

  // NVML while the timed samples ran: a power cap or thermal slowdown that
  // readings before and after, on an idle GPU, can miss.
  struct DuringSamples {
    std::optional<unsigned> min_sm_clock_mhz;
    std::uint64_t slowdown_reasons = 0;
  };

  // A held stream can queue only what fits the launch queue (about a
  // thousand launches; a GEMM may take two).
  static constexpr int kMaxCallsPerSample = 128;

  // Times `enqueue_one(i)` in samples of back-to-back calls with CUDA events;
  // each sample is seconds per call. Every sample is queued whole behind a
  // StreamBlocker before the GPU starts on it, so a kernel of a microsecond
  // is timed on the GPU, not at the host's launch rate: up to
  // kMaxCallsPerSample calls, or as many as take about sample_seconds.
  Measurement time_samples(const MeasurementPolicy& policy, const std::function<void(int)>& enqueue_one,
                           DuringSamples* during = nullptr) {
    EventTimer timer;
    int next = 0;
    std::vector<std::optional<GpuReadings>> readings;  // one per sample, warm-up included
    constexpr double kReadingInterval = 0.05;
    double last_read = -kReadingInterval;
    auto timed = [&](int calls) {
      // Released on every path: an exception while held would otherwise
      // leave the stream spinning until the timeout, and the blocker unusable.
      struct Hold {
        StreamBlocker& blocker;
        ~Hold() { blocker.release(); }
      };
      {
        blocker->block(stream);
        const Hold hold{*blocker};
        timer.start(stream);
        for (int i = 0; i < calls; ++i) enqueue_one(next++);
        timer.stop(stream);
      }
      // Read while the batch runs, not after it: the GPU under load. At most
      // every 50 ms: NVML's calls can outlast a short sample, and the gaps
      // they leave between samples would let a power-capped GPU cool.
      if (during) {
        const bool due = steady_seconds() - last_read >= kReadingInterval;
        readings.push_back(due ? nvml.read(device.uuid) : std::nullopt);  // one slot per sample
        if (due) last_read = steady_seconds();
      }
      const double seconds = timer.elapsed_seconds();
      if (blocker->timed_out())
        throw std::runtime_error("the stream was released by its timeout before the sample was queued: no "
                                 "trustworthy time");
      return seconds;
    };
    // One untimed call (loads the kernels outside a hold), then one timed
    // call to size the samples.
    enqueue_one(next++);
    REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
    const double estimate = timed(1);
    readings.clear();
    const int per_sample = static_cast<int>(std::clamp(
        std::ceil(options.sample_seconds / std::max(estimate, 1e-7)), 1.0, static_cast<double>(kMaxCallsPerSample)));
    Measurement m = measure(policy, [&] { return timed(per_sample) / per_sample; });
    if (during) {
      // The warm-up's readings are the clocks ramping up: not the run's.
      for (std::size_t i = static_cast<std::size_t>(m.warmup_iterations); i < readings.size(); ++i) {
        if (!readings[i]) continue;
        if (const auto clock = readings[i]->sm_clock_mhz)
          during->min_sm_clock_mhz = std::min(during->min_sm_clock_mhz.value_or(*clock), *clock);
        if (const auto reasons = readings[i]->throttle_reasons)
          during->slowdown_reasons |= *reasons & kSlowdownReasonMask;
      }
    }
    return m;
  }

  // NVML before, during (between samples) and after; median and spread of
  // the samples.
  void add_readings(benchmark::State& state, const std::optional<GpuReadings>& before, const DuringSamples& during,
                    const std::optional<GpuReadings>& after, std::string& note) {
    if (before) {
      if (before->sm_clock_mhz) state.counters["sm_clock_mhz_before"] = *before->sm_clock_mhz;
      if (before->temperature_c) state.counters["temperature_c_before"] = *before->temperature_c;
      if (before->power_w) state.counters["power_w_before"] = *before->power_w;
      // Shown, not judged on (see below).
      if (before->throttle_reasons)
        state.counters["throttled_before"] = (*before->throttle_reasons & kSlowdownReasonMask) != 0 ? 1 : 0;
    }
    if (during.min_sm_clock_mhz) state.counters["sm_clock_mhz_min"] = *during.min_sm_clock_mhz;
    if (after) {
      if (after->sm_clock_mhz) state.counters["sm_clock_mhz_after"] = *after->sm_clock_mhz;
      if (after->temperature_c) state.counters["temperature_c_after"] = *after->temperature_c;
      if (after->power_w) state.counters["power_w_after"] = *after->power_w;
    }
    if (!before && !after && !during.min_sm_clock_mhz) return;  // no NVML: unknown, not "not throttled"
    // The timed samples and right after them decide: the reading before
    // follows the reference check and the CUPTI trace, whose own power cap
    // would mark a point whose timed window was not slowed.
    std::uint64_t reasons = during.slowdown_reasons;
    if (after && after->throttle_reasons) reasons |= *after->throttle_reasons & kSlowdownReasonMask;
    state.counters["throttled"] = reasons != 0 ? 1 : 0;
    if (reasons != 0) note += std::string(note.empty() ? "" : "; ") + "throttled: " + slowdown_reason_names(reasons);
  }

  static void add_spread(benchmark::State& state, const Measurement& m) {
    state.counters["time_cv"] = m.summary.cv;
    state.counters["time_min_us"] = m.summary.min * 1e6;
    state.counters["time_max_us"] = m.summary.max * 1e6;
    state.counters["samples"] = static_cast<double>(m.samples.size());
  }

  void measure_gemm(benchmark::State& state, const GemmCase& c);
  void measure_copy(benchmark::State& state, std::size_t bytes);
  void measure_fma(benchmark::State& state);
};

namespace {

// Google Benchmark's error text, in the "<status>: <why>" form RowCollector reads.
std::string error_text(const std::exception& e) {
  if (const auto* cuda = dynamic_cast<const CudaError*>(&e); cuda && cuda->is_out_of_memory())
    return std::string("oom: ") + e.what();
  // cuBLASLt's own allocations (workspace, plans) fail as ALLOC_FAILED.
  if (const auto* cublas = dynamic_cast<const CublasError*>(&e); cublas && cublas->is_out_of_memory())
    return std::string("oom: ") + e.what();
  return std::string("error: ") + e.what();
}

std::string percent(double fraction) { return format_number(100 * fraction, 1) + "%"; }

// The kernel that does the GEMM among those a cuBLASLt call launched: the
// one whose name states a tile, else the one with the most CTAs (split-K
// adds a small reduction kernel).
const LaunchedKernel* gemm_kernel(const KernelTrace& trace) {
  const LaunchedKernel* best = nullptr;
  for (const auto& k : trace.kernels)
    if (tile_from_kernel_name(k.name)) return &k;
  for (const auto& k : trace.kernels)
    if (!best || k.ctas() > best->ctas()) best = &k;
  return best;
}

}  // namespace

std::string gemm_case_name(const GemmCase& c) {
  std::vector<std::pair<std::string, std::string>> params = {
      {"dtype", gemm_dtype_info(c.dtype).name}, {"layout", gemm_layout_name(c.layout)},
      {"m", std::to_string(c.size.m)},          {"n", std::to_string(c.size.n)},
      {"k", std::to_string(c.size.k)}};
  params.insert(params.end(), c.extra_params.begin(), c.extra_params.end());
  return gbench_case_name("gemm", params);
}

void GemmRunner::State::measure_gemm(benchmark::State& state, const GemmCase& c) {
  const std::string name = gemm_case_name(c);
  NvtxRange range(name.c_str());
  const GemmDtypeInfo& info = gemm_dtype_info(c.dtype);
  if (const auto reason = gemm_unsupported_reason(c.dtype, c.layout, c.size.m, c.size.n, c.size.k)) {
    state.SkipWithError(("error: " + *reason).c_str());
    return;
  }
  std::string note;
  try {
    GemmOptions gemm_options;
    gemm_options.dtype = c.dtype;
    gemm_options.layout = c.layout;
    gemm_options.heuristic_candidates = options.heuristic_candidates;
    LtGemm gemm(c.size.m, c.size.n, c.size.k, gemm_options, stream);
    const MeasurementPolicy policy = policy_for_this_case();

    // With several heuristic candidates, keep the fastest by a short timing.
    if (gemm.candidate_count() > 1) {
      MeasurementPolicy quick = policy;
      quick.min_repetitions = 3;
      quick.max_repetitions = 10;
      quick.max_seconds = 0.5;
      std::optional<int> best;
      double best_time = 0;
      std::string failures;
      for (int i = 0; i < gemm.candidate_count() && !interrupted(); ++i) {
        gemm.select_candidate(i);
        // A candidate cuBLASLt offers but cannot run is passed over, not the
        // whole shape's failure; a CUDA error (sticky) still ends the shape.
        try {
          const Measurement t = time_samples(quick, [&](int set) { gemm.enqueue(set); });
          if (t.samples.empty()) continue;  // interrupted
          if (!best || t.summary.median < best_time) best = i, best_time = t.summary.median;
        } catch (const CublasError& e) {
          failures += std::string(failures.empty() ? "" : "; ") + "candidate " + std::to_string(i) + ": " + e.what();
        }
        quick.warmup_seconds = std::min(quick.warmup_seconds, 0.05);  // the clocks are up after the first
      }
      if (!best && !failures.empty()) throw std::runtime_error("no heuristic candidate ran: " + failures);
      gemm.select_candidate(best.value_or(0));
      if (!failures.empty()) note = "passed over " + failures;
    }

    const GemmCheck check = [&] {
      NvtxRange verify_range("verify");
      return gemm.verify(0);
    }();
    const KernelTrace trace = trace_kernels([&] {
      gemm.enqueue(0);
      REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
    });

    const auto before = nvml.read(device.uuid);
    DuringSamples during;
    Measurement m;
    {
      NvtxRange timed_range("timed");
      m = time_samples(policy, [&](int set) { gemm.enqueue(set); }, &during);
    }
    const auto after = nvml.read(device.uuid);
    if (m.stop == StopReason::interrupted || m.samples.empty()) {
      state.SkipWithError("skipped: interrupted");
      return;
    }

    for (auto _ : state) state.SetIterationTime(m.summary.median);

    const double tflops = gemm.flop_count() / m.summary.median / 1e12;
    state.counters["tflops"] = tflops;
    if (options.peaks && options.peaks->tflops(info.peak) > 0)
      state.counters["datasheet_pct"] = 100 * tflops / options.peaks->tflops(info.peak);
    add_spread(state, m);
    state.counters["rel_error"] = check.relative_error;
    state.counters["wrong"] = check.passed() ? 0 : static_cast<double>(std::max<std::int64_t>(1, check.nonfinite));
    if (!check.passed())
      note = "verification failed: relative error " + format_number(check.relative_error, 3) + " (tolerance " +
             format_number(check.tolerance, 3) + "), " + std::to_string(check.nonfinite) + " non-finite" +
             (note.empty() ? "" : "; " + note);

    // The tile: cuBLASLt's tile id when it gives one, else the kernel's name.
    const GemmAlgorithm& algo = gemm.algorithm();
    const LaunchedKernel* kernel = gemm_kernel(trace);
    std::optional<TileShape> tile = algo.tile;
    if (!tile && kernel) tile = tile_from_kernel_name(kernel->name);
    state.counters["split_k"] = algo.split_k;
    if (algo.heuristic_waves > 0) state.counters["heuristic_waves"] = algo.heuristic_waves;
    if (kernel) state.counters["grid_ctas"] = static_cast<double>(kernel->ctas());
    if (tile) {
      state.counters["tile_m"] = static_cast<double>(tile->rows);
      state.counters["tile_n"] = static_cast<double>(tile->cols);
      GemmProblem problem{c.size.m, c.size.n, c.size.k, *tile, device.sm_count, 1, std::max(1, algo.split_k)};
      const GemmPrediction p = predict_gemm(problem);
      state.counters["tiles"] = static_cast<double>(p.tiles);
      state.counters["waves"] = p.waves;
      state.counters["tile_efficiency"] = p.tile_efficiency;
      state.counters["wave_efficiency"] = p.wave_efficiency;
      state.counters["predicted_efficiency"] = p.predicted_efficiency;
    } else {
      note += std::string(note.empty() ? "" : "; ") + "tile unknown (" +
              (trace.unavailable ? *trace.unavailable : std::string("kernel name states none")) + ")";
    }
    if (const auto align = gemm_alignment_note(c.dtype, c.layout, c.size.m, c.size.n, c.size.k))
      note += std::string(note.empty() ? "" : "; ") + *align;
    if (gemm.rotation_bytes() < 2 * device.l2_bytes)
      note += std::string(note.empty() ? "" : "; ") + "operands partly L2-resident: " +
              std::to_string(gemm.buffer_sets()) + " buffer sets span " + format_size(gemm.rotation_bytes()) +
              ", under twice the L2";
    // Noisy only when a noise target was set and the cap came first: with
    // --target-cv 0, or a CV that met the target on the last sample, the cap
    // says nothing about noise.
    const bool capped = m.stop == StopReason::time_cap || m.stop == StopReason::repetition_cap;
    if (capped && policy.target_cv > 0 && m.summary.cv >= policy.target_cv)
      note += std::string(note.empty() ? "" : "; ") + "noisy: cv " + percent(m.summary.cv) + " at the " +
              (m.stop == StopReason::time_cap ? "time" : "repetition") + " cap";
    add_readings(state, before, during, after, note);
    state.SetLabel(note);
    progress.line(name + ": " + format_number(tflops, 1) + " TFLOPS" + (check.passed() ? "" : " WRONG"));
  } catch (const GemmUnsupported& e) {
    state.SkipWithError((std::string("error: ") + e.what()).c_str());
  } catch (const std::exception& e) {
    state.SkipWithError(error_text(e).c_str());
  }
}

void GemmRunner::State::measure_copy(benchmark::State& state, std::size_t bytes) {
  NvtxRange range("roofline/copy");
  try {
    DeviceBuffer<unsigned char> src(bytes), dst(bytes);
    random_fill(reinterpret_cast<std::int8_t*>(src.data()), bytes, 11, -100, 100, stream);
    const MeasurementPolicy policy = policy_for_this_case();
    const auto before = nvml.read(device.uuid);
    DuringSamples during;
    const Measurement m =
        time_samples(policy, [&](int) { enqueue_device_copy(src.data(), dst.data(), bytes, stream); }, &during);
    const auto after = nvml.read(device.uuid);
    if (m.stop == StopReason::interrupted || m.samples.empty()) {
      state.SkipWithError("skipped: interrupted");
      return;
    }
    // The copy is checked whole, on the host: it must be exact.
    REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::vector<unsigned char> a = src.to_host(), b = dst.to_host();
    const bool exact = std::memcmp(a.data(), b.data(), bytes) == 0;
    for (auto _ : state) state.SetIterationTime(m.summary.median);
    const double gbps = 2.0 * static_cast<double>(bytes) / m.summary.median / 1e9;
    state.counters["hbm_GBps"] = gbps;
    if (options.peaks && options.peaks->hbm_GBps > 0) state.counters["datasheet_pct"] = 100 * gbps / options.peaks->hbm_GBps;
    add_spread(state, m);
    state.counters["wrong"] = exact ? 0 : 1;
    std::string note = exact ? "" : "copy differs from its source";
    add_readings(state, before, during, after, note);
    state.SetLabel(note);
    progress.line("roofline copy: " + format_number(gbps, 0) + " GB/s");
  } catch (const std::exception& e) {
    state.SkipWithError(error_text(e).c_str());
  }
}

void GemmRunner::State::measure_fma(benchmark::State& state) {
  NvtxRange range("roofline/fma");
  try {
    // About 10 ms of work at an H100's rate per launch.
    const FmaLaunch launch = plan_fma(5e11);
    DeviceBuffer<float> sink(launch.sink_floats());
    const MeasurementPolicy policy = policy_for_this_case();
    const auto before = nvml.read(device.uuid);
    DuringSamples during;
    const Measurement m = time_samples(policy, [&](int) { enqueue_fma(launch, sink.data(), stream); }, &during);
    const auto after = nvml.read(device.uuid);
    if (m.stop == StopReason::interrupted || m.samples.empty()) {
      state.SkipWithError("skipped: interrupted");
      return;
    }
    const std::vector<float> values = sink.to_host();
    const auto nonfinite = std::count_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
    for (auto _ : state) state.SetIterationTime(m.summary.median);
    const double tflops = launch.flop_count() / m.summary.median / 1e12;
    state.counters["tflops"] = tflops;
    if (options.peaks && options.peaks->fp32_tflops > 0)
      state.counters["datasheet_pct"] = 100 * tflops / options.peaks->fp32_tflops;
    add_spread(state, m);
    state.counters["wrong"] = static_cast<double>(nonfinite);
    std::string note = nonfinite == 0 ? "" : "FMA results not finite";
    add_readings(state, before, during, after, note);
    state.SetLabel(note);
    progress.line("roofline fma: " + format_number(tflops, 1) + " TFLOPS (non-tensor fp32)");
  } catch (const std::exception& e) {
    state.SkipWithError(error_text(e).c_str());
  }
}

GemmRunner::GemmRunner(GemmRunnerOptions options, std::vector<benchmark::BenchmarkReporter*> forwards,
                       const Progress& progress)
    : state_(std::make_unique<State>(std::move(options), forwards, progress)) {}

GemmRunner::~GemmRunner() = default;

const DeviceProperties& GemmRunner::device() const { return state_->device; }

namespace {

// Manual time from CUDA events, one iteration per repetition: the harness's
// measurement inside decides how many samples make the figure.
void configure(benchmark::internal::Benchmark* b) {
  b->UseManualTime()->Iterations(1)->Unit(benchmark::kMicrosecond);
}

// Runs what is registered (nothing: no run, so Google Benchmark does not
// report an empty match) and clears the registry for the next batch.
std::vector<Row> run_registered(RowCollector& collector, std::size_t registered, int repetition, int repetitions) {
  if (registered > 0) {
    collector.set_repetition(repetition, repetitions);
    benchmark::RunSpecifiedBenchmarks(&collector);
  }
  benchmark::ClearRegisteredBenchmarks();
  return collector.take_rows();
}

}  // namespace

std::vector<Row> GemmRunner::run(const std::vector<GemmCase>& cases, const std::optional<MeasurementPolicy>& policy) {
  // For these cases only, whichever way run() ends.
  state_->policy_override = policy;
  struct Reset {
    std::optional<MeasurementPolicy>& override;
    ~Reset() { override.reset(); }
  } reset{state_->policy_override};
  std::vector<Row> rows;
  for (int repetition = 0; repetition < std::max(1, state_->options.repetitions); ++repetition) {
    if (interrupted()) break;
    for (const GemmCase& c : cases)
      configure(benchmark::RegisterBenchmark(gemm_case_name(c).c_str(), [this, c](benchmark::State& st) {
        if (interrupted()) {
          st.SkipWithError("skipped: interrupted");
          return;
        }
        state_->measure_gemm(st, c);
      }));
    for (auto& row : run_registered(state_->collector, cases.size(), repetition, state_->options.repetitions)) rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<Row> GemmRunner::run_roofline() {
  // 1 GiB each way: far beyond any L2, so the copy streams from HBM.
  const std::size_t bytes = std::size_t{1} << 30;
  std::vector<Row> rows;
  for (int repetition = 0; repetition < std::max(1, state_->options.repetitions); ++repetition) {
    if (interrupted()) break;
    configure(benchmark::RegisterBenchmark(gbench_case_name("roofline", {{"kernel", "copy"}}).c_str(),
                                           [this, bytes](benchmark::State& st) { state_->measure_copy(st, bytes); }));
    configure(benchmark::RegisterBenchmark(gbench_case_name("roofline", {{"kernel", "fma"}}).c_str(),
                                           [this](benchmark::State& st) { state_->measure_fma(st); }));
    for (auto& row : run_registered(state_->collector, 2, repetition, state_->options.repetitions)) rows.push_back(std::move(row));
  }
  return rows;
}

void GemmRunner::finish() { state_->collector.finish(); }

}  // namespace redline
