// What a profiled program did on the GPU, as CUPTI's activity records report
// it, reduced to what the profile needs: kernels, copies and memsets with
// their GPU timestamps and stream, and the program's NVTX ranges. The
// injection library (kernels/profile/) writes these, one a line, as a trace
// file (trace_file.hpp); everything that reads a profile reads them back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace redline::profile {

enum class ActivityKind { kernel, memcpy, memset, range };
enum class CopyKind { h2d, d2h, d2d, other };

struct Activity {
  ActivityKind kind = ActivityKind::kernel;
  std::int64_t start_ns = 0, end_ns = 0;  // CUPTI's GPU timestamps (ranges: the host's, same clock)
  int device = 0;
  std::uint32_t stream = 0;   // kernels, copies and memsets
  std::string name;           // a kernel's (demangled) name, a range's message
  CopyKind copy = CopyKind::other;  // memcpy
  std::int64_t bytes = 0;     // memcpy and memset
  std::int64_t duration_ns() const { return end_ns - start_ns; }
  bool is_gpu_work() const { return kind != ActivityKind::range; }  // a range is the host's mark
};

// A GEMM the program called, with its shape: a recorded cuBLAS call joined
// to its kernel (gemm_calls.hpp). `time_ns` is on the activities' clock: the
// start of the call's first kernel, so it falls in the step that ran it.
struct GemmCall {
  std::int64_t time_ns = 0;
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string dtype;  // bf16, fp16, fp32, tf32, fp8
  double flop() const { return 2.0 * static_cast<double>(m) * n * k * batch; }
};

// What joins a recorded cuBLAS or NCCL call to the kernels it launched
// (call_kernels.hpp). The call is recorded on the host with an id of its
// own (the external id), which
// CUPTI ties to the correlation id of each CUDA API call made inside it;
// a kernel carries the correlation id of the API call that launched it.
struct GemmCallRecord {  // a cuBLAS call, as recorded before it ran
  std::int64_t external_id = 0;
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string dtype;
};
struct ExternalCorrelation {  // CUPTI: this API call ran inside that cuBLAS call
  std::int64_t correlation_id = 0, external_id = 0;
};
struct KernelCorrelation {  // CUPTI: the kernel launched by this API call ran from here to there
  std::int64_t correlation_id = 0, start_ns = 0, end_ns = 0;
  int device = 0;  // the GPU it ran on
};

// An NCCL call, as recorded before it ran (kernels/profile/nccl_interposer).
// Calls NCCL launched together (one group) share the external id.
struct NcclCallRecord {
  std::int64_t external_id = 0;
  std::string collective;  // all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, send, recv
  std::int64_t count = 0;          // the count argument, as the call passed it
  std::int64_t element_bytes = 0;  // 0: a datatype the recorder did not know
  std::int64_t ranks = 0;          // the communicator's size; 0: unknown
};

// The NCCL calls of one launch (a group, or one call outside a group)
// joined to their kernels (nccl_calls.hpp): placed at the first kernel's
// start, with the kernels' summed time.
struct NcclLaunch {
  std::int64_t time_ns = 0;
  std::int64_t kernel_ns = 0;
  std::vector<NcclCallRecord> calls;
};

// A whole trace: the records in the order written, and what was lost.
struct Trace {
  std::vector<Activity> activities;
  std::vector<GemmCall> gemms;
  std::vector<GemmCallRecord> gemm_calls;
  std::vector<ExternalCorrelation> external_correlations;
  std::vector<KernelCorrelation> kernel_correlations;
  std::vector<NcclCallRecord> nccl_calls;
  std::vector<NcclLaunch> nccl_launches;
  // cuBLAS (NCCL) calls were recorded for this trace, so an empty `gemms`
  // (`nccl_launches`) means none matched a kernel, not that nobody looked.
  bool gemm_calls_recorded = false;
  bool nccl_calls_recorded = false;
  // The activities' clock against the host's steady clock (CLOCK_MONOTONIC),
  // read together once: monotonic = activity + clock_offset_ns. Lets host
  // events (a printed step line) be placed among the GPU's records.
  bool has_clock = false;
  std::int64_t clock_offset_ns = 0;
  std::int64_t dropped = 0;  // records CUPTI dropped (a full buffer), summed over the `dropped` lines
  std::vector<std::string> problems;  // what the injection library reported (no CUPTI, a failed enable)
  std::int64_t process_id = 0;        // the traced process (0: the trace does not say)
  // The injection library's exit flush finished; a trace without it ends
  // where the program was killed, or left without running atexit.
  bool ended = false;
};

}  // namespace redline::profile
