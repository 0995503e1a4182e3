// What this GPU was measured to do, read from a suite run folder or the
// reference results for its model: MAMF per dtype, HBM bandwidth, pinned
// host copies, all-reduce bus bandwidth. Rows are recognised by what they
// hold (a `result=mamf` row's tflops, an `hbm_GBps` metric, a
// `stage=gpu.d2h` pinned copy's GBps, an all_reduce row's busbw), never by
// the tool that wrote them. A profile's categories are set beside them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/profile/step_breakdown.hpp"
#include "harness/report/run_results.hpp"

namespace redline::profile {

struct Ceilings {
  std::string source;                         // the folder they came from
  std::map<std::string, double> mamf_tflops;  // by dtype: the best measured
  std::optional<double> hbm_GBps, d2h_GBps, h2d_GBps, busbw_GBps;
  bool empty() const { return mamf_tflops.empty() && !hbm_GBps && !d2h_GBps && !h2d_GBps && !busbw_GBps; }
};

Ceilings ceilings_from(const RunResults& run);

// A step's figures summed over the profiled steps, with what each category
// moved or computed where the trace says so.
struct ProfileTotals {
  std::size_t steps = 0;
  StepBreakdown sum;                         // every field summed over the steps
  std::map<Category, std::int64_t> bytes;    // copies and memsets
  std::map<std::string, double> gemm_flop;   // by dtype, from the trace's GEMM calls; empty: shapes unknown
  bool gemm_calls_recorded = false;          // the trace's cuBLAS calls were recorded (Trace::gemm_calls_recorded)
};

ProfileTotals total_over(const Trace& trace, const std::vector<StepWindow>& steps);

struct CeilingFinding {
  std::string text;         // "GEMMs run at 61% of this GPU's measured bf16 MAMF (...)"
  double excess_ns = 0;     // time a step spends beyond what the ceiling allows (0: unknown or none)
};

// One finding per category with time, and the idle time, each with what it
// costs beyond the ceiling where that is known; where a figure the ceiling
// needs is missing (shapes, message sizes, a measured ceiling), the finding
// says so rather than guessing.
std::vector<CeilingFinding> ceiling_findings(const ProfileTotals& totals, const Ceilings& ceilings);
// The idle time in words: "the GPU is idle 18% of the step, mostly between
// kernels (launch-bound)".
CeilingFinding idle_finding(const ProfileTotals& totals);
// The finding with the largest excess, as the profile's verdict; nullopt
// when none has a known excess.
std::optional<std::string> largest_gap(const std::vector<CeilingFinding>& findings);

}  // namespace redline::profile
