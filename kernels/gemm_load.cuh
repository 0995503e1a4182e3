// A training-like GPU load for a checkpoint's async save: the benchmarked
// cuBLASLt GEMM (bf16, 8192^3, the size of a large layer's matmul) run back
// to back and counted, so "does the persist slow training down" is measured
// on the work training does. The interface has no CUDA types, so the bench's
// main() stays plain C++.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace redline {

// The load's GEMM failed its check against the reference: a wrong result (a
// "wrong" row), which is a finding about this GPU, not a failure to run.
class GemmLoadWrong : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class GemmLoad {
 public:
  // On the current device. Verifies one GEMM against the reference first (a
  // load that computes garbage proves nothing), then warms up for about 0.5 s
  // so the first rate is not taken on idle clocks. Throws GemmUnsupported,
  // CudaError (out of memory), or GemmLoadWrong when the check fails.
  GemmLoad();
  ~GemmLoad();
  GemmLoad(const GemmLoad&) = delete;
  GemmLoad& operator=(const GemmLoad&) = delete;

  // GEMMs per second over `seconds`, or until `stop` returns true (checked
  // after each batch of GEMMs, about 10 ms of work). At least one batch runs,
  // so the rate is always measured over real work, even when `stop` is
  // already true. One batch stays queued ahead of the one waited on, so the
  // GPU never waits for this thread; all of it has finished when this returns.
  double rate(double seconds, const std::function<bool()>& stop) const;
  // What runs, for the caller's line on what the load stands for.
  std::string description() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace redline
