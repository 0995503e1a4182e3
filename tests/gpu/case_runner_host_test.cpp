// What of the GPU case runner needs no GPU, checked for real: the row it
// builds after timing (rates, datasheet percentage, spread, clocks and
// throttling, notes), how many calls make a sample, and the status a
// failure gets.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/runner/case_row.hpp"
#include "kernels/runner/case_runner.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/runner/sample_timer.hpp"
#include "tests/support.hpp"

namespace {

using namespace redline;

// A measurement with these samples (seconds) and this stop.
Measurement measurement(std::vector<double> samples, StopReason stop) {
  Measurement m;
  m.summary = summarize(samples);
  m.samples = std::move(samples);
  m.stop = stop;
  return m;
}

GpuReadings readings(unsigned clock_mhz, std::uint64_t reasons) {
  GpuReadings r;
  r.sm_clock_mhz = clock_mhz;
  r.temperature_c = 60;
  r.power_w = 500;
  r.throttle_reasons = reasons;
  return r;
}

constexpr std::uint64_t kSwPowerCap = 0x4;      // in kSlowdownReasonMask
constexpr std::uint64_t kApplicationsClocks = 0x2;  // not a slowdown: outside the mask

TEST(CaseRow, RatesOverTheMedianAndTheDatasheetPercentage) {
  CaseWork gemm;
  gemm.flop = 2e12;
  gemm.datasheet = DatasheetCeiling{DatasheetCeiling::Rate::tflops, 1000};
  CaseRow row;
  add_rates(row, gemm, 0.004);  // 2e12 FLOP in 4 ms: 500 TFLOPS
  EXPECT_DOUBLE_EQ(row.counters().at("tflops"), 500);
  EXPECT_DOUBLE_EQ(row.counters().at("datasheet_pct"), 50);
  EXPECT_FALSE(row.counters().count("hbm_GBps")) << "no byte count, no bandwidth";
  EXPECT_EQ(rate_text(gemm, 0.004), "500.0 TFLOPS");

  CaseWork copy;
  copy.bytes = 3e9;
  copy.datasheet = DatasheetCeiling{DatasheetCeiling::Rate::bandwidth, 4000};
  CaseRow copy_row;
  add_rates(copy_row, copy, 0.001);  // 3 GB in 1 ms: 3000 GB/s
  EXPECT_DOUBLE_EQ(copy_row.counters().at("hbm_GBps"), 3000);
  EXPECT_DOUBLE_EQ(copy_row.counters().at("datasheet_pct"), 75);
  EXPECT_FALSE(copy_row.counters().count("tflops"));
  EXPECT_EQ(rate_text(copy, 0.001), "3000 GB/s");
}

TEST(CaseRow, NoPercentageWithoutAKnownCeilingOrItsRate) {
  CaseWork work;
  work.flop = 1e12;
  CaseRow none;
  add_rates(none, work, 1);
  EXPECT_FALSE(none.counters().count("datasheet_pct"));
  work.datasheet = DatasheetCeiling{DatasheetCeiling::Rate::tflops, 0};  // the table has no figure
  CaseRow unknown;
  add_rates(unknown, work, 1);
  EXPECT_FALSE(unknown.counters().count("datasheet_pct"));
  work.datasheet = DatasheetCeiling{DatasheetCeiling::Rate::bandwidth, 3000};  // a rate this case has not
  CaseRow other;
  add_rates(other, work, 1);
  EXPECT_FALSE(other.counters().count("datasheet_pct"));
}

TEST(CaseRow, SpreadCounters) {
  CaseRow row;
  add_spread(row, measurement({1e-3, 2e-3, 3e-3}, StopReason::noise_target));
  EXPECT_DOUBLE_EQ(row.counters().at("time_min_us"), 1000);
  EXPECT_DOUBLE_EQ(row.counters().at("time_max_us"), 3000);
  EXPECT_DOUBLE_EQ(row.counters().at("samples"), 3);
  EXPECT_GT(row.counters().at("time_cv"), 0.4);
}

TEST(CaseRow, NoisyOnlyWhenACapEndedSamplesAboveTheTarget) {
  MeasurementPolicy policy;
  policy.target_cv = 0.01;
  const std::vector<double> spread = {1e-3, 1.2e-3, 0.8e-3};  // cv 20%
  CaseRow capped;
  add_noise_note(capped, measurement(spread, StopReason::time_cap), policy);
  EXPECT_EQ(capped.note_text(), "noisy: cv 20.0% at the time cap");
  CaseRow repetitions;
  add_noise_note(repetitions, measurement(spread, StopReason::repetition_cap), policy);
  EXPECT_EQ(repetitions.note_text(), "noisy: cv 20.0% at the repetition cap");
  CaseRow met;
  add_noise_note(met, measurement({1e-3, 1e-3, 1e-3}, StopReason::time_cap), policy);
  EXPECT_EQ(met.note_text(), "");
  CaseRow stopped_by_noise;
  add_noise_note(stopped_by_noise, measurement(spread, StopReason::noise_target), policy);
  EXPECT_EQ(stopped_by_noise.note_text(), "");
  policy.target_cv = 0;  // no noise target: a cap says nothing about noise
  CaseRow no_target;
  add_noise_note(no_target, measurement(spread, StopReason::time_cap), policy);
  EXPECT_EQ(no_target.note_text(), "");
}

TEST(CaseRow, ClocksDuringSamplesLeaveOutTheWarmUp) {
  const std::vector<std::optional<GpuReadings>> per_sample = {
      readings(900, kSwPowerCap),  // warm-up: ramping, not the run's
      readings(1980, kApplicationsClocks), std::nullopt, readings(1500, 0)};
  const ClocksDuringSamples during = clocks_during_samples(per_sample, 1);
  EXPECT_EQ(during.min_sm_clock_mhz, 1500u);
  EXPECT_EQ(during.slowdown_reasons, 0u) << "applications clocks are no slowdown; the warm-up's cap is left out";
  EXPECT_EQ(clocks_during_samples(per_sample, 0).slowdown_reasons, kSwPowerCap);
  EXPECT_FALSE(clocks_during_samples({std::nullopt}, 0).min_sm_clock_mhz);
}

TEST(CaseRow, ThrottledDuringOrAfterNotBefore) {
  ClockReadings clocks;
  clocks.before = readings(1980, kSwPowerCap);  // the set-up's own load
  clocks.after = readings(1755, 0);
  clocks.during.min_sm_clock_mhz = 1700;
  CaseRow calm;
  add_clock_readings(calm, clocks);
  EXPECT_DOUBLE_EQ(calm.counters().at("throttled"), 0);
  EXPECT_DOUBLE_EQ(calm.counters().at("throttled_before"), 1);
  EXPECT_DOUBLE_EQ(calm.counters().at("sm_clock_mhz_before"), 1980);
  EXPECT_DOUBLE_EQ(calm.counters().at("sm_clock_mhz_min"), 1700);
  EXPECT_DOUBLE_EQ(calm.counters().at("sm_clock_mhz_after"), 1755);
  EXPECT_DOUBLE_EQ(calm.counters().at("power_w_after"), 500);
  EXPECT_DOUBLE_EQ(calm.counters().at("temperature_c_before"), 60);
  EXPECT_EQ(calm.note_text(), "");

  clocks.during.slowdown_reasons = kSwPowerCap;
  CaseRow capped;
  capped.note("the case's own note");
  add_clock_readings(capped, clocks);
  EXPECT_DOUBLE_EQ(capped.counters().at("throttled"), 1);
  EXPECT_EQ(capped.note_text(), "the case's own note; throttled: " + slowdown_reason_names(kSwPowerCap));

  clocks.during.slowdown_reasons = 0;
  clocks.after = readings(1400, kSwPowerCap);
  CaseRow after;
  add_clock_readings(after, clocks);
  EXPECT_DOUBLE_EQ(after.counters().at("throttled"), 1);
}

TEST(CaseRow, WithoutNvmlThrottlingIsUnknownNotNo) {
  CaseRow row;
  add_clock_readings(row, ClockReadings{});
  EXPECT_TRUE(row.counters().empty());
  EXPECT_EQ(row.note_text(), "");
}

TEST(CaseRow, NotesJoinInOrderAndEmptyOnesDrop) {
  CaseRow row;
  row.note("first");
  row.note("");
  row.note("second");
  EXPECT_EQ(row.note_text(), "first; second");
}

TEST(SampleTimer, CallsPerSampleFillTheSampleWithinTheLaunchQueue) {
  EXPECT_EQ(calls_per_sample(2e-3, 1e-3), 2);
  EXPECT_EQ(calls_per_sample(2e-3, 0.3e-3), 7);        // rounded up
  EXPECT_EQ(calls_per_sample(2e-3, 10e-3), 1);         // a long kernel: one call
  EXPECT_EQ(calls_per_sample(2e-3, 1e-6), kMaxCallsPerSample);  // a tiny one: what the held queue takes
  EXPECT_EQ(calls_per_sample(2e-3, 0), kMaxCallsPerSample);     // no estimate is no division by zero
}

TEST(CaseRunner, OutOfMemoryIsOomAndEverythingElseError) {
  EXPECT_EQ(failure_status_text(CudaError(cudaErrorMemoryAllocation, "cudaMalloc(&p, n)", "here.cpp", 1))
                .substr(0, 5),
            "oom: ");
  EXPECT_CONTAINS(failure_status_text(CudaError(cudaErrorMemoryAllocation, "cudaMalloc(&p, n)", "here.cpp", 1)),
                  "cudaMalloc(&p, n) failed");
  EXPECT_EQ(failure_status_text(CudaError(cudaErrorInvalidValue, "cudaMemcpy", "here.cpp", 2)).substr(0, 7),
            "error: ");
#if defined(REDLINE_HAVE_CUBLASLT)
  EXPECT_EQ(failure_status_text(CublasError(CUBLAS_STATUS_ALLOC_FAILED, "cublasLtCreate", "here.cpp", 3)).substr(0, 5),
            "oom: ");
  EXPECT_EQ(failure_status_text(CublasError(CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmul", "here.cpp", 4)).substr(0, 7),
            "error: ");
#endif
  EXPECT_EQ(failure_status_text(std::runtime_error("no algorithm")), "error: no algorithm");
  EXPECT_EQ(failure_status_text(CaseSkipped("cuDNN has no kernel")), "skipped: cuDNN has no kernel");
}

// Google Benchmark drops an errored run's counters: the runner adds a failed
// check's figures to its `wrong` row afterwards, matched by parameters in
// run order, and leaves every other row alone.
TEST(CaseRow, FailedCheckFiguresReachTheirWrongRows) {
  auto row_of = [](const std::string& m, const std::string& status) {
    Row row;
    row.param("dtype", "bf16").param("m", m);
    row.status = *parse_row_status(status);
    return row;
  };
  std::vector<Row> rows = {row_of("64", "wrong"), row_of("128", "ok"), row_of("128", "wrong"), row_of("64", "wrong")};
  const std::vector<FailedCheck> failed = {
      {{{"dtype", "bf16"}, {"m", "64"}}, {{"wrong", 3}, {"rel_error", 0.5}}},
      {{{"dtype", "bf16"}, {"m", "128"}}, {{"wrong", 1}}},
      {{{"dtype", "bf16"}, {"m", "64"}}, {{"wrong", 7}}}};
  add_failed_check_figures(rows, failed);
  EXPECT_EQ(rows[0].metric_value("wrong"), 3);
  EXPECT_EQ(rows[0].metric_value("rel_error"), 0.5);
  EXPECT_TRUE(rows[1].metrics.empty());
  EXPECT_EQ(rows[2].metric_value("wrong"), 1);
  EXPECT_EQ(rows[3].metric_value("wrong"), 7);  // the second failure of m=64
  EXPECT_FALSE(rows[3].metric_value("rel_error"));
}

TEST(CaseRow, AFailedCheckCountsAtLeastOneWrong) {
  EXPECT_EQ(CaseCheck::fail("why").figures.at("wrong"), 1);
  EXPECT_EQ(CaseCheck::fail("why", 0).figures.at("wrong"), 1);  // an error above tolerance, no non-finite
  EXPECT_EQ(CaseCheck::fail("why", 5, {{"rel_error", 2}}).figures.at("rel_error"), 2);
  EXPECT_TRUE(CaseCheck::pass().figures.empty());
}

TEST(CaseRunner, CaseNameIsTheGoogleBenchmarkName) {
  EXPECT_EQ(case_name({"roofline", {{"kernel", "copy"}}}), "roofline/kernel:copy");
  EXPECT_EQ(case_name({"gemm", {{"dtype", "bf16"}, {"m", "64"}}}), "gemm/dtype:bf16/m:64");
}

}  // namespace
