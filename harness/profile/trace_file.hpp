// The trace file the injection library writes and `redline profile` reads:
// text, one record a line, tab-separated, after a header line. Written as
// the program runs (a line per record as CUPTI hands its buffers back), so a
// program killed by a signal leaves every completed buffer behind.
//   # redline profile trace 1
//   process PID                  (the traced process: its recorders' files carry the id)
//   kernel  START END DEVICE STREAM NAME
//   memcpy  START END DEVICE STREAM h2d|d2h|d2d|other BYTES
//   memset  START END DEVICE STREAM BYTES
//   range   START END NAME
//   gemm    TIME M N K BATCH DTYPE
//   gemmcall   EXTERNAL_ID M N K BATCH DTYPE   (a cuBLAS call, before it ran)
//   extcorr    CORRELATION_ID EXTERNAL_ID      (an API call inside that cuBLAS call)
//   ncclcall   EXTERNAL_ID COLLECTIVE COUNT ELEMENT_BYTES RANKS   (an NCCL call, before it ran)
//   kernelcorr CORRELATION_ID START END DEVICE (a kernel that API call launched)
//   clock   ACTIVITY_NS MONOTONIC_NS   (the two clocks read together)
//   dropped COUNT
//   problem TEXT
//   end                          (the exit flush finished: nothing after it was lost)
#pragma once

#include <filesystem>
#include <string>

#include "harness/profile/activity.hpp"

namespace redline::profile {

std::string trace_header();                  // "# redline profile trace 1\n"
std::string trace_line(const Activity& a);   // one record, newline-terminated; tabs and newlines in names become spaces
std::string gemm_line(const GemmCall& g);
std::string gemm_call_line(const GemmCallRecord& g);
std::string external_correlation_line(std::int64_t correlation_id, std::int64_t external_id);
std::string nccl_call_line(const NcclCallRecord& c);
std::string kernel_correlation_line(const KernelCorrelation& k);
std::string clock_line(std::int64_t activity_ns, std::int64_t monotonic_ns);
std::string dropped_line(std::int64_t count);
std::string problem_line(const std::string& text);
std::string process_line(std::int64_t pid);
std::string end_line();

// Reads a trace back. Throws std::runtime_error naming the file and line for
// a file that is not a trace or a malformed line; a last line cut short (the
// program was killed mid-write) is ignored and counted as dropped.
Trace read_trace(const std::filesystem::path& file);
Trace parse_trace(const std::string& text, const std::string& source);

}  // namespace redline::profile
