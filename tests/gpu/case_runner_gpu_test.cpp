// The GPU case runner on a real device, with cases that do trivially known
// work: a case that runs is ok and timed; a case whose verify fails is
// `wrong` and never timed; a set-up that runs out of memory is `oom`; a set-up
// may time its variants with the runner's own sampling.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/core/progress.hpp"
#include "kernels/runner/case_runner.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"
#include "tests/support.hpp"

namespace {

using namespace redline;

constexpr std::size_t kBytes = 1 << 20;

// What a test case saw: how often each step ran.
struct Calls {
  int set_ups = 0, verifies = 0, enqueues = 0, variant_samples = 0;
};

// Fills a buffer with a byte per call: known work, checked exactly.
class Fill final : public PreparedCase {
 public:
  Fill(Calls& calls, bool verify_passes) : calls_(calls), verify_passes_(verify_passes), buffer_(kBytes) {}

  CaseWork work() const override {
    CaseWork work;
    work.bytes = kBytes;
    return work;
  }
  CaseCheck verify(cudaStream_t stream) override {
    ++calls_.verifies;
    REDLINE_CUDA_CHECK(cudaMemsetAsync(buffer_.data(), 0x5A, kBytes, stream));
    REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (const unsigned char byte : buffer_.to_host())
      if (byte != 0x5A) return CaseCheck::fail("a byte was not written");
    if (!verify_passes_) return CaseCheck::fail("made to fail");
    CaseCheck passed = CaseCheck::pass();
    passed.figures["rel_error"] = 0;  // every byte as written
    return passed;
  }
  void enqueue(cudaStream_t stream, int iteration) override {
    ++calls_.enqueues;
    REDLINE_CUDA_CHECK(cudaMemsetAsync(buffer_.data(), iteration & 0xFF, kBytes, stream));
  }
  void describe(CaseRow& row) const override { row.note("described"); }

 private:
  Calls& calls_;
  bool verify_passes_;
  DeviceBuffer<unsigned char> buffer_;
};

class FillCase final : public GpuCase {
 public:
  enum class Kind { ok, wrong, out_of_memory, with_variants };
  FillCase(std::string name, Kind kind, Calls& calls) : name_(std::move(name)), kind_(kind), calls_(calls) {}

  CaseKey key() const override { return {"runner_test", {{"case", name_}}}; }
  std::unique_ptr<PreparedCase> set_up(CaseSetUp& setup) const override {
    ++calls_.set_ups;
    if (kind_ == Kind::out_of_memory) {
      const DeviceBuffer<unsigned char> too_large(std::size_t{1} << 50);  // 1 PiB: no GPU has it
    }
    auto fill = std::make_unique<Fill>(calls_, kind_ != Kind::wrong);
    if (kind_ == Kind::with_variants)
      for (int variant = 0; variant < 2; ++variant)
        calls_.variant_samples += static_cast<int>(
            setup.time_variant([&](int i) { fill->enqueue(setup.stream(), i); }).samples.size());
    return fill;
  }

 private:
  std::string name_;
  Kind kind_;
  Calls& calls_;
};

class CaseRunnerGpu : public ::testing::Test {
 protected:
  // The one row of one case of `kind` run alone.
  Row run_one(FillCase::Kind kind, Calls& calls) {
    CaseRunnerOptions options;
    options.policy.warmup_seconds = 0;
    options.policy.min_repetitions = 3;
    options.policy.max_repetitions = 5;
    options.policy.max_seconds = 0.2;
    options.first_warmup_seconds = 0;
    CaseRunner runner(options, {}, progress_);
    std::vector<std::unique_ptr<GpuCase>> cases;
    cases.push_back(std::make_unique<FillCase>("one", kind, calls));
    std::vector<Row> rows = runner.run(cases);
    runner.finish();
    EXPECT_EQ(rows.size(), 1u);
    return rows.at(0);
  }

  const Progress progress_{0};
};

TEST_F(CaseRunnerGpu, ACaseThatRunsIsOkAndTimed) {
  Calls calls;
  const Row row = run_one(FillCase::Kind::ok, calls);
  EXPECT_EQ(row.status, RowStatus::ok) << row.note;
  EXPECT_EQ(row.param_value("case"), "one");
  EXPECT_GT(row.metric_value("time_us").value_or(0), 0);
  EXPECT_GT(row.metric_value("hbm_GBps").value_or(0), 0);
  EXPECT_EQ(row.metric_value("wrong"), 0);
  EXPECT_EQ(row.metric_value("rel_error"), 0) << "a passed check's figures reach its row";
  EXPECT_GE(row.metric_value("samples").value_or(0), 3);
  EXPECT_EQ(row.note.substr(0, 9), "described");
  EXPECT_EQ(calls.set_ups, 1);
  EXPECT_EQ(calls.verifies, 1);
  EXPECT_GT(calls.enqueues, 3) << "an untimed call, a sizing call, then the samples";
}

TEST_F(CaseRunnerGpu, AWrongCaseIsNeverTimed) {
  Calls calls;
  const Row row = run_one(FillCase::Kind::wrong, calls);
  EXPECT_EQ(row.status, RowStatus::wrong);
  EXPECT_EQ(row.note, "verification failed: made to fail");
  EXPECT_EQ(row.metric_value("wrong"), 1);  // the check's figures reach the row
  EXPECT_FALSE(row.metric_value("time_us"));
  EXPECT_EQ(calls.verifies, 1);
  EXPECT_EQ(calls.enqueues, 0) << "not one timed call";
}

TEST_F(CaseRunnerGpu, AnOutOfMemorySetUpIsOom) {
  Calls calls;
  const Row row = run_one(FillCase::Kind::out_of_memory, calls);
  EXPECT_EQ(row.status, RowStatus::oom) << row.note;
  EXPECT_CONTAINS(row.note, "cudaMalloc");
  EXPECT_EQ(calls.verifies, 0);
  EXPECT_EQ(calls.enqueues, 0);
  // The runner goes on: the next case runs ok.
  Calls next;
  EXPECT_EQ(run_one(FillCase::Kind::ok, next).status, RowStatus::ok);
}

TEST_F(CaseRunnerGpu, ASetUpTimesItsVariantsWithTheRunnersSampling) {
  Calls calls;
  const Row row = run_one(FillCase::Kind::with_variants, calls);
  EXPECT_EQ(row.status, RowStatus::ok) << row.note;
  EXPECT_GE(calls.variant_samples, 2 * 3) << "each variant at least 3 samples";
}

}  // namespace
