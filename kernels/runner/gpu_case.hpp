// What a GPU microbenchmark supplies to the case runner (kernels/runner/case_runner.hpp):
// its cases. A case has a key, a set-up, and once set up its FLOP and byte
// counts, a verify and a function that enqueues the work once on a stream;
// the runner does everything else (registration, warm-up, timing, clocks,
// statuses, NVTX, rows). A new benchmark is a folder of these.
//
// A case's life in the runner, once per case and repetition:
//   set_up(setup)    allocations, random inputs, plans; may time its
//                    variants with setup.time_variant and keep the fastest
//   verify(stream)   runs the work once and compares it with a reference;
//                    a failure is status `wrong` and the case is never timed
//   enqueue(...)     the timed work, many times, back to back
//   describe(row)    counters and notes that explain the figure
//   ~PreparedCase    frees what set_up took, before the next case sets up
// An exception anywhere is the row's status: `oom` when CUDA or cuBLAS ran
// out of memory, `skipped` for CaseSkipped (the library has no kernel for
// the case), else `error`, with the message as its note.
//
// A new benchmark (bench/gemm/gemm_case.cpp is one): per case a GpuCase
// whose key names it ("attention/impl:cudnn/dtype:bf16/s:4096/d:128/pass:bwd")
// and whose set_up returns a PreparedCase holding its buffers and plan; work()
// gives the FLOP count (and bytes, where bandwidth is the figure) and the
// datasheet ceiling to compare with; verify compares with a reference
// implementation; enqueue launches the work; describe adds what explains it
// ("causal: exact count of unmasked scores"). The tool then hands its cases
// to CaseRunner::run and reports the rows.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/measure/measurement.hpp"
#include "kernels/runner/case_row.hpp"
#include "kernels/device_query.cuh"

namespace redline {

// Names a case: "gemm/dtype:bf16/m:4096" for Google Benchmark and
// --benchmark_filter; each parameter becomes a row parameter, in order.
struct CaseKey {
  std::string family;
  std::vector<std::pair<std::string, std::string>> params;
};
std::string case_name(const CaseKey& key);  // gbench_case_name

// Thrown by a set-up when the case cannot run on this GPU or library (cuDNN
// has no kernel for the shape): the row is `skipped`, the message its note.
class CaseSkipped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CaseCheck {
  bool passed = true;
  std::string failure;  // why not, for the note: "relative error 0.3 (tolerance 0.01), 0 non-finite"
  // A failed check's row is all it has (it is never timed): `wrong`, the
  // elements that failed (at least 1), and the check's own figures (a GEMM's
  // rel_error), each a metric of the row. A passed check's figures go on its
  // timed row too.
  std::map<std::string, double> figures;

  static CaseCheck pass() { return {}; }
  static CaseCheck fail(std::string why, double wrong = 1, std::map<std::string, double> figures = {}) {
    figures["wrong"] = std::max(1.0, wrong);
    return {false, std::move(why), std::move(figures)};
  }
};

// What the runner lends a set-up.
class CaseSetUp {
 public:
  virtual ~CaseSetUp() = default;
  // The stream every call of this case runs on.
  virtual cudaStream_t stream() const = 0;
  virtual const DeviceProperties& device() const = 0;
  // Times `enqueue` briefly (3 to 10 samples, at most 0.5 s) with the
  // runner's own sampling, for a case that picks the fastest of its variants
  // (GEMM's heuristic candidates). The case's warm-up runs before the first;
  // the clocks are up after it, so later ones warm up 0.05 s at most. An
  // interrupted timing has no samples.
  virtual Measurement time_variant(const std::function<void(int iteration)>& enqueue) = 0;
};

// A case set up and ready to verify and time.
class PreparedCase {
 public:
  virtual ~PreparedCase() = default;
  virtual CaseWork work() const = 0;
  virtual CaseCheck verify(cudaStream_t stream) = 0;
  // Enqueues the work once on `stream` (the set-up's) and never synchronizes.
  // `iteration` counts the calls of one timing, for a case that rotates
  // buffer sets so its operands are not timed from L2.
  virtual void enqueue(cudaStream_t stream, int iteration) = 0;
  // After timing: what explains the figure (a GEMM's tile and waves).
  virtual void describe(CaseRow& row) const { (void)row; }
};

class GpuCase {
 public:
  virtual ~GpuCase() = default;
  virtual CaseKey key() const = 0;
  virtual std::unique_ptr<PreparedCase> set_up(CaseSetUp& setup) const = 0;
};

}  // namespace redline
