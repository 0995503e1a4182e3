// The case runner's time against a kernel of known length. The kernel spins
// for a fixed count of SM cycles and reads the GPU's own nanosecond timer
// (%globaltimer) at its start and end, so each launch reports how long it ran
// at whatever clock the SM held; the runner's per-call time must agree within
// 2%, for a short kernel (about 0.1 ms: back-to-back launches, where a gap
// between them would show) and a long one (about 10 ms). A host that is slower
// to enqueue than the GPU is to run must not show either: the stream blocker
// holds the launches until all of a sample is queued. The sample timer's
// other shapes: one call a sample and not held (a training step's), and a
// held sample capped below the launch queue (calls of many launches).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "harness/core/progress.hpp"
#include "kernels/runner/case_runner.hpp"
#include "kernels/runner/sample_timer.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"

namespace {

using namespace redline;

// One warp: spins `cycles` SM clocks, then adds its own duration and one launch.
__global__ void spin_for_cycles(long long cycles, unsigned long long* total_ns, unsigned long long* launches) {
  unsigned long long started = 0, ended = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(started));
  const long long first = clock64();
  while (clock64() - first < cycles) {
  }
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ended));
  if (threadIdx.x == 0) {
    atomicAdd(total_ns, ended - started);
    atomicAdd(launches, 1ull);
  }
}

// The kernel's own mean duration over its launches since the last zero(), in us.
struct SpinTotals {
  DeviceBuffer<unsigned long long> total_ns{1}, launches{1};
  // Fresh device memory holds whatever a freed block left: zero before counting.
  void zero(cudaStream_t stream) {
    REDLINE_CUDA_CHECK(cudaMemsetAsync(total_ns.data(), 0, sizeof(unsigned long long), stream));
    REDLINE_CUDA_CHECK(cudaMemsetAsync(launches.data(), 0, sizeof(unsigned long long), stream));
  }
  double mean_us() const {
    REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
    const double ns = static_cast<double>(total_ns.to_host().at(0));
    return ns / static_cast<double>(launches.to_host().at(0)) / 1e3;
  }
};

class Spin final : public PreparedCase {
 public:
  Spin(long long cycles, double host_delay_us, SpinTotals& totals)
      : cycles_(cycles), host_delay_us_(host_delay_us), totals_(totals) {}
  CaseWork work() const override { return {}; }
  CaseCheck verify(cudaStream_t stream) override {
    totals_.zero(stream);
    enqueue(stream, 0);
    REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
    return totals_.mean_us() > 0 ? CaseCheck::pass() : CaseCheck::fail("the spin kernel reported no time");
  }
  void enqueue(cudaStream_t stream, int) override {
    // A host slower than the kernel: without the blocker the GPU would wait on it.
    if (host_delay_us_ > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(host_delay_us_));
    spin_for_cycles<<<1, 32, 0, stream>>>(cycles_, totals_.total_ns.data(), totals_.launches.data());
    REDLINE_CUDA_CHECK(cudaGetLastError());
  }

 private:
  long long cycles_;
  double host_delay_us_;
  SpinTotals& totals_;
};

class SpinCase final : public GpuCase {
 public:
  SpinCase(long long cycles, double host_delay_us, SpinTotals& totals)
      : cycles_(cycles), host_delay_us_(host_delay_us), totals_(totals) {}
  CaseKey key() const override { return {"timer_test", {{"cycles", std::to_string(cycles_)}}}; }
  std::unique_ptr<PreparedCase> set_up(CaseSetUp&) const override {
    return std::make_unique<Spin>(cycles_, host_delay_us_, totals_);
  }

 private:
  long long cycles_;
  double host_delay_us_;
  SpinTotals& totals_;
};

// The runner's time_us for the spin, beside the kernel's own mean duration.
std::pair<double, double> runner_and_kernel_us(long long cycles, double host_delay_us) {
  SpinTotals totals;
  CaseRunnerOptions options;
  options.policy.warmup_seconds = 0.05;
  options.policy.min_repetitions = 5;
  options.policy.max_repetitions = 20;
  options.policy.max_seconds = 0.5;
  options.first_warmup_seconds = 0.1;
  const Progress progress{0};
  CaseRunner runner(options, {}, progress);
  std::vector<std::unique_ptr<GpuCase>> cases;
  cases.push_back(std::make_unique<SpinCase>(cycles, host_delay_us, totals));
  const std::vector<Row> rows = runner.run(cases);
  runner.finish();
  EXPECT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows.at(0).status, RowStatus::ok) << rows.at(0).note;
  return {rows.at(0).metric_value("time_us").value_or(0), totals.mean_us()};
}

TEST(CaseRunnerTimer, AShortKernelBackToBackWithin2Percent) {
  const auto [runner_us, kernel_us] = runner_and_kernel_us(200'000, 0);  // about 0.1 ms at 1.5-2 GHz
  EXPECT_NEAR(runner_us / kernel_us, 1, 0.02) << "runner " << runner_us << " us, kernel " << kernel_us << " us";
}

TEST(CaseRunnerTimer, ALongKernelWithin2Percent) {
  const auto [runner_us, kernel_us] = runner_and_kernel_us(20'000'000, 0);  // about 10 ms
  EXPECT_NEAR(runner_us / kernel_us, 1, 0.02) << "runner " << runner_us << " us, kernel " << kernel_us << " us";
}

TEST(CaseRunnerTimer, TheStreamBlockerHidesASlowHost) {
  // The host takes 0.3 ms to enqueue a 0.1 ms kernel: timed without the
  // blocker each call would read about 0.3 ms.
  const auto [runner_us, kernel_us] = runner_and_kernel_us(200'000, 300);
  EXPECT_NEAR(runner_us / kernel_us, 1, 0.02) << "runner " << runner_us << " us, kernel " << kernel_us << " us";
}

SampleShape shape(double sample_seconds, int max_calls, bool held) {
  SampleShape shape;
  shape.sample_seconds = sample_seconds;
  shape.max_calls = max_calls;
  shape.held = held;
  return shape;
}

// A stream of its own for the sample timer's tests.
struct TestStream {
  cudaStream_t stream = nullptr;
  TestStream() { REDLINE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)); }
  ~TestStream() { (void)cudaStreamDestroy(stream); }
};

// Not held, one call a sample: nothing runs but the policy's warm-up and
// timed samples (a caller's --warmup is exact), each called back once its
// time is read, and a long call's time within 2% of the kernel's own over
// the same (timed) samples.
TEST(SampleTimerShapes, OneCallASampleNotHeldRunsExactlyThePolicy) {
  SpinTotals totals;
  TestStream s;
  totals.zero(s.stream);
  SampleTimer timer(s.stream, shape(0, 1, false));
  MeasurementPolicy policy = fixed_count_policy(5);
  policy.warmup_iterations = 2;  // with no warm-up seconds, exactly the first 2 samples
  int enqueued = 0, finished = 0, seen_at_callback = 0;
  const Measurement m = timer
                            .time(
                                policy,
                                [&](int) {
                                  ++enqueued;
                                  spin_for_cycles<<<1, 32, 0, s.stream>>>(20'000'000, totals.total_ns.data(),
                                                                          totals.launches.data());
                                  REDLINE_CUDA_CHECK(cudaGetLastError());
                                },
                                {},
                                [&] {
                                  ++finished;
                                  // The sample is done when it is called back: the stream has nothing left.
                                  if (cudaStreamQuery(s.stream) == cudaSuccess) ++seen_at_callback;
                                  // Count only the timed samples' launches, as the median does; queued
                                  // before the next sample's start event, so outside its time.
                                  if (finished == policy.warmup_iterations) totals.zero(s.stream);
                                })
                            .measurement;
  EXPECT_EQ(enqueued, 7);
  EXPECT_EQ(finished, 7);
  EXPECT_EQ(seen_at_callback, 7);
  EXPECT_EQ(m.warmup_iterations, 2);
  ASSERT_EQ(m.samples.size(), 5u);
  const double kernel_us = totals.mean_us();
  EXPECT_NEAR(m.summary.median * 1e6 / kernel_us, 1, 0.02) << "timer " << m.summary.median * 1e6 << " us, kernel "
                                                           << kernel_us << " us";
}

// Held, at most 4 calls a sample: one untimed call, one to size the samples,
// then 4 calls for each of the warm-up and timed samples, however short.
TEST(SampleTimerShapes, HeldSamplesStopAtTheirCallCap) {
  SpinTotals totals;
  TestStream s;
  SampleTimer timer(s.stream, shape(2e-3, 4, true));
  MeasurementPolicy policy = fixed_count_policy(3);
  policy.warmup_iterations = 1;
  int enqueued = 0;
  const Measurement m = timer
                            .time(policy,
                                  [&](int) {
                                    ++enqueued;
                                    spin_for_cycles<<<1, 32, 0, s.stream>>>(2'000, totals.total_ns.data(),
                                                                            totals.launches.data());
                                    REDLINE_CUDA_CHECK(cudaGetLastError());
                                  })
                            .measurement;
  EXPECT_EQ(enqueued, 1 + 1 + 4 * (1 + 3));
  EXPECT_EQ(m.samples.size(), 3u);
}

TEST(SampleTimerShapes, ShapesOutOfRangeAreRefused) {
  TestStream s;
  EXPECT_THROW(SampleTimer(s.stream, shape(2e-3, 0, true)), std::invalid_argument);
  EXPECT_THROW(SampleTimer(s.stream, shape(2e-3, kMaxCallsPerSample + 1, true)), std::invalid_argument);
  EXPECT_THROW(SampleTimer(s.stream, shape(-1, 1, true)), std::invalid_argument);
}

}  // namespace
