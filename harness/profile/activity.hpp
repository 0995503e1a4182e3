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
};

// A GEMM the program called, with its shape, where the trace records it
// (the injection library does not yet: cuBLAS calls are not intercepted).
// `time_ns` is on the activities' clock; the GEMM's kernel starts after it.
struct GemmCall {
  std::int64_t time_ns = 0;
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string dtype;  // bf16, fp16, fp32, tf32, fp8
  double flop() const { return 2.0 * static_cast<double>(m) * n * k * batch; }
};

// A whole trace: the records in the order written, and what was lost.
struct Trace {
  std::vector<Activity> activities;
  std::vector<GemmCall> gemms;
  // The activities' clock against the host's steady clock (CLOCK_MONOTONIC),
  // read together once: monotonic = activity + clock_offset_ns. Lets host
  // events (a printed step line) be placed among the GPU's records.
  bool has_clock = false;
  std::int64_t clock_offset_ns = 0;
  std::int64_t dropped = 0;  // records CUPTI dropped (a full buffer), summed over the `dropped` lines
  std::vector<std::string> problems;  // what the injection library reported (no CUPTI, a failed enable)
};

}  // namespace redline::profile
