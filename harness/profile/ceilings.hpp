// What this GPU was measured to do, read from a suite run folder or the
// reference results for its model: MAMF per dtype, HBM bandwidth, pinned
// host copies, each collective's bandwidth by message size. Rows are
// recognised by what they hold (a `result=mamf` row's tflops, an `hbm_GBps`
// metric, a `stage=gpu.d2h` pinned copy's GBps, a `collective` row's algbw
// at its `bytes`), never by the tool that wrote them. A profile's
// categories are set beside them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/measure/size_curve.hpp"
#include "harness/profile/step_breakdown.hpp"
#include "harness/report/run_results.hpp"

namespace redline::profile {

// One collective's measured algorithm bandwidth (bytes / time) by message
// size, over one number of ranks: the time a call of that collective and
// size takes at what this cluster was measured to do is bytes / algbw, with
// no bus factor to assume (it is the same for the same collective and ranks).
struct CollectiveCurve {
  std::string collective;         // all_reduce, all_gather, ... as the rows name it
  std::int64_t ranks = 0;         // the run's ranks (its JSON summary); 0: not recorded
  std::vector<ThroughputPoint> algbw_GBps;  // the best at each `bytes`, ascending
};

struct Ceilings {
  std::string source;                         // the folder they came from
  std::map<std::string, double> mamf_tflops;  // by dtype: the best measured
  std::optional<double> hbm_GBps, d2h_GBps, h2d_GBps;
  std::vector<CollectiveCurve> collective_curves;
  bool empty() const {
    return mamf_tflops.empty() && !hbm_GBps && !d2h_GBps && !h2d_GBps && collective_curves.empty();
  }
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
  std::vector<NcclLaunch> nccl_launches;     // the trace's NCCL launches that started in the steps
  bool nccl_calls_recorded = false;          // Trace::nccl_calls_recorded
};

ProfileTotals total_over(const Trace& trace, const std::vector<StepWindow>& steps);

struct CeilingFinding {
  std::string text;         // "GEMMs run at 61% of this GPU's measured bf16 MAMF (...)"
  double excess_ns = 0;     // time a step spends beyond what the ceiling allows (0: unknown or none)
};

// One finding per category with time, and the idle time, each with what it
// costs beyond the ceiling where that is known; where a figure the ceiling
// needs is missing (shapes, message sizes, a measured ceiling), the finding
// says so rather than guessing. NCCL's excess is its exposed part only:
// time overlapped with compute costs the step nothing.
std::vector<CeilingFinding> ceiling_findings(const ProfileTotals& totals, const Ceilings& ceilings);
// The idle time in words: "the GPU is idle 18% of the step, mostly between
// kernels (launch-bound)".
CeilingFinding idle_finding(const ProfileTotals& totals);
// The finding with the largest excess, as the profile's verdict; nullopt
// when none has a known excess.
std::optional<std::string> largest_gap(const std::vector<CeilingFinding>& findings);

}  // namespace redline::profile
