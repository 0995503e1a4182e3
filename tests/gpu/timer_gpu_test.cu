// The case runner's time against a kernel of known length. The kernel spins
// for a fixed count of SM cycles and reads the GPU's own nanosecond timer
// (%globaltimer) at its start and end, so each launch reports how long it ran
// at whatever clock the SM held; the runner's per-call time must agree within
// 2%, for a short kernel (about 0.1 ms: back-to-back launches, where a gap
// between them would show) and a long one (about 10 ms). A host that is slower
// to enqueue than the GPU is to run must not show either: the stream blocker
// holds the launches until all of a sample is queued.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "harness/core/progress.hpp"
#include "kernels/runner/case_runner.hpp"
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

// The kernel's own mean duration over every launch so far, in us.
struct SpinTotals {
  DeviceBuffer<unsigned long long> total_ns{1}, launches{1};
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
    REDLINE_CUDA_CHECK(cudaMemsetAsync(totals_.total_ns.data(), 0, sizeof(unsigned long long), stream));
    REDLINE_CUDA_CHECK(cudaMemsetAsync(totals_.launches.data(), 0, sizeof(unsigned long long), stream));
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

}  // namespace
