#include "bench/gemm/roofline_cases.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/cuda_check.cuh"
#include "kernels/device_buffer.cuh"
#include "kernels/random_fill.cuh"
#include "kernels/roofline.cuh"

namespace redline::gemm {
namespace {

// 1 GiB each way: far beyond any L2, so the copy streams from HBM.
constexpr std::size_t kCopyBytes = std::size_t{1} << 30;
// About 10 ms of work at an H100's rate per launch.
constexpr double kFmaFlop = 5e11;

std::optional<DatasheetCeiling> ceiling(DatasheetCeiling::Rate rate, double value) {
  if (!(value > 0)) return std::nullopt;
  return DatasheetCeiling{rate, value};
}

class PreparedCopy final : public PreparedCase {
 public:
  PreparedCopy(double datasheet_gbps, cudaStream_t stream)
      : datasheet_gbps_(datasheet_gbps), src_(kCopyBytes), dst_(kCopyBytes) {
    random_fill(reinterpret_cast<std::int8_t*>(src_.data()), kCopyBytes, 11, -100, 100, stream);
  }

  CaseWork work() const override {
    CaseWork work;
    work.bytes = 2.0 * static_cast<double>(kCopyBytes);  // one read, one write
    work.datasheet = ceiling(DatasheetCeiling::Rate::bandwidth, datasheet_gbps_);
    return work;
  }
  // The copy is checked whole, on the host: it must be exact.
  CaseCheck verify(cudaStream_t stream) override {
    enqueue(stream, 0);
    REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::vector<unsigned char> a = src_.to_host(), b = dst_.to_host();
    return std::memcmp(a.data(), b.data(), kCopyBytes) == 0 ? CaseCheck::pass()
                                                            : CaseCheck::fail("copy differs from its source");
  }
  void enqueue(cudaStream_t stream, int) override { enqueue_device_copy(src_.data(), dst_.data(), kCopyBytes, stream); }

 private:
  double datasheet_gbps_;
  DeviceBuffer<unsigned char> src_, dst_;
};

class PreparedFma final : public PreparedCase {
 public:
  explicit PreparedFma(double datasheet_tflops)
      : datasheet_tflops_(datasheet_tflops), launch_(plan_fma(kFmaFlop)), sink_(launch_.sink_floats()) {}

  CaseWork work() const override {
    CaseWork work;
    work.flop = launch_.flop_count();
    work.datasheet = ceiling(DatasheetCeiling::Rate::tflops, datasheet_tflops_);
    return work;
  }
  // Every thread's sum of its chains stays near the chains' fixed point: a
  // value that is not finite means the kernel computed garbage.
  CaseCheck verify(cudaStream_t stream) override {
    enqueue(stream, 0);
    REDLINE_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::vector<float> values = sink_.to_host();
    const auto nonfinite = std::count_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
    return nonfinite == 0 ? CaseCheck::pass()
                          : CaseCheck::fail("FMA results not finite (" + std::to_string(nonfinite) + " of " +
                                                std::to_string(values.size()) + ")",
                                            static_cast<double>(nonfinite));
  }
  void enqueue(cudaStream_t stream, int) override { enqueue_fma(launch_, sink_.data(), stream); }

 private:
  double datasheet_tflops_;
  FmaLaunch launch_;
  DeviceBuffer<float> sink_;
};

class CopyCase final : public GpuCase {
 public:
  explicit CopyCase(double datasheet_gbps) : datasheet_gbps_(datasheet_gbps) {}
  CaseKey key() const override { return {"roofline", {{"kernel", "copy"}}}; }
  std::unique_ptr<PreparedCase> set_up(CaseSetUp& setup) const override {
    return std::make_unique<PreparedCopy>(datasheet_gbps_, setup.stream());
  }

 private:
  double datasheet_gbps_;
};

class FmaCase final : public GpuCase {
 public:
  explicit FmaCase(double datasheet_tflops) : datasheet_tflops_(datasheet_tflops) {}
  CaseKey key() const override { return {"roofline", {{"kernel", "fma"}}}; }
  std::unique_ptr<PreparedCase> set_up(CaseSetUp&) const override {
    return std::make_unique<PreparedFma>(datasheet_tflops_);
  }

 private:
  double datasheet_tflops_;
};

}  // namespace

std::vector<std::unique_ptr<GpuCase>> roofline_cases(const std::optional<GpuPeaks>& peaks) {
  std::vector<std::unique_ptr<GpuCase>> cases;
  cases.push_back(std::make_unique<CopyCase>(peaks ? peaks->hbm_GBps : 0));
  cases.push_back(std::make_unique<FmaCase>(peaks ? peaks->fp32_tflops : 0));
  return cases;
}

}  // namespace redline::gemm
