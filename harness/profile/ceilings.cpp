#include "harness/profile/ceilings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "harness/core/units.hpp"
#include "harness/profile/nccl_calls.hpp"
#include "harness/report/recorded_summary.hpp"

namespace redline::profile {
namespace {

// A ceiling of 0, below it or not finite measured nothing (a failed row's
// figure): dividing by it would print "inf%".
bool usable_ceiling(double value) { return std::isfinite(value) && value > 0; }

void keep_best(std::optional<double>& best, double value) {
  if (usable_ceiling(value)) best = best ? std::max(*best, value) : value;
}

std::string ms(double ns) { return format_number(ns / 1e6, 2) + " ms"; }

double per_step(const ProfileTotals& t, std::int64_t ns) { return static_cast<double>(ns) / static_cast<double>(t.steps); }

std::int64_t time_of(const ProfileTotals& t, Category c) {
  const auto it = t.sum.category_ns.find(c);
  return it == t.sum.category_ns.end() ? 0 : it->second;
}

CeilingFinding gemm_finding(const ProfileTotals& t, const Ceilings& c) {
  const double time_ns = per_step(t, time_of(t, Category::gemm));
  if (t.gemm_flop.empty())
    return {"GEMM: " + ms(time_ns) + " a step; the GEMM shapes are unknown (" +
                (t.gemm_calls_recorded ? std::string("no recorded cuBLAS call's kernel ran in the profiled steps")
                                       : std::string("the trace records no cuBLAS calls; --gemm-shapes records them")) +
                "), so their rate is not set against the measured MAMF",
            0};
  const auto dominant = std::max_element(t.gemm_flop.begin(), t.gemm_flop.end(),
                                         [](const auto& a, const auto& b) { return a.second < b.second; });
  double flop = 0;
  for (const auto& [dtype, f] : t.gemm_flop) flop += f;
  flop /= static_cast<double>(t.steps);
  const double tflops = flop / (time_ns / 1e9) / 1e12;
  const auto mamf = c.mamf_tflops.find(dominant->first);
  if (mamf == c.mamf_tflops.end())
    return {"GEMM: " + ms(time_ns) + " a step at " + format_number(tflops, 1) + " TFLOPS; no measured " +
            dominant->first + " MAMF in the ceilings", 0};
  const double floor_ns = flop / (mamf->second * 1e12) * 1e9;
  return {"GEMMs run at " + format_percent(tflops / mamf->second, 0) + " of this GPU's measured " + dominant->first +
              " MAMF (" + format_number(tflops, 1) + " of " + format_number(mamf->second, 1) + " TFLOPS; " +
              ms(time_ns) + " a step)",
          std::max(0.0, time_ns - floor_ns)};
}

// The curve a call is read on: its collective over its ranks; a curve whose
// run did not record its ranks serves where no exact one was measured.
const CollectiveCurve* curve_for(const Ceilings& c, const NcclCallRecord& call) {
  const CollectiveCurve* unranked = nullptr;
  for (const CollectiveCurve& curve : c.collective_curves) {
    if (curve.collective != call.collective) continue;
    if (curve.ranks == call.ranks) return &curve;
    if (curve.ranks == 0) unranked = &curve;
  }
  return unranked;
}

// What the launch's calls would take at the measured algbw for their
// collective and size; otherwise why the launch is not compared.
struct LaunchFloor {
  double floor_ns = 0;
  std::string not_compared;  // empty: compared
};

LaunchFloor launch_floor(const NcclLaunch& launch, const Ceilings& c) {
  LaunchFloor f;
  for (const NcclCallRecord& call : launch.calls) {
    const auto bytes = message_bytes(call);
    if (!bytes) return {0, call.collective + " calls of unknown size (datatype or ranks unknown)"};
    const CollectiveCurve* curve = curve_for(c, call);
    if (!curve)
      return {0, call.collective + " over " + std::to_string(call.ranks) + " ranks: not measured in the ceilings"};
    const auto algbw = read_at_size(curve->algbw_GBps, *bytes);
    if (!algbw)
      return {0, call.collective + " messages outside the sizes measured (" +
                     format_size(static_cast<std::uint64_t>(curve->algbw_GBps.front().size)) + " to " +
                     format_size(static_cast<std::uint64_t>(curve->algbw_GBps.back().size)) + ")"};
    f.floor_ns += *bytes / algbw->value;  // bytes / (GB/s) = ns
  }
  return f;
}

CeilingFinding nccl_finding(const ProfileTotals& t, const Ceilings& c) {
  const double time_ns = per_step(t, time_of(t, Category::nccl));
  const double overlap = t.sum.nccl_ns > 0 ? static_cast<double>(t.sum.nccl_overlap_ns) / t.sum.nccl_ns : 0;
  const std::string head = "NCCL: " + ms(time_ns) + " a step, " + format_percent(overlap, 0) +
                           " of it overlapped with compute";
  if (!t.nccl_calls_recorded)
    return {head + "; the message sizes are unknown (the trace records no NCCL calls; --nccl-sizes records them), "
                   "so its rate is not set against the measured bandwidth",
            0};
  if (t.nccl_launches.empty())
    return {head + "; no recorded NCCL call's kernel ran in the profiled steps, so its rate is not set against the "
                   "measured bandwidth",
            0};
  double kernel_ns = 0, floor_ns = 0;
  std::size_t compared = 0;
  std::map<std::string, std::size_t> not_compared;
  for (const NcclLaunch& launch : t.nccl_launches) {
    const LaunchFloor f = launch_floor(launch, c);
    if (!f.not_compared.empty()) {
      ++not_compared[f.not_compared];
      continue;
    }
    ++compared, kernel_ns += static_cast<double>(launch.kernel_ns), floor_ns += f.floor_ns;
  }
  std::string rest;
  for (const auto& [why, launches] : not_compared) rest += "; " + std::to_string(launches) + " not compared: " + why;
  const std::string counted = std::to_string(compared) + " of " + std::to_string(t.nccl_launches.size()) +
                              " launches compared" + rest;
  if (compared == 0 || kernel_ns <= 0) return {head + "; " + counted, 0};
  const double steps = static_cast<double>(t.steps);
  return {head + "; its collectives ran at " + format_percent(floor_ns / kernel_ns, 0) +
              " of the bandwidth measured for the same collectives and sizes (" + ms(kernel_ns / steps) +
              " a step where the measured algbw gives " + ms(floor_ns / steps) + "; " + counted + ")",
          std::max(0.0, (kernel_ns - floor_ns) / steps * (1 - overlap))};
}

// A copy's rate against its measured ceiling; a device-to-device copy reads
// and writes each byte, as the HBM figure counts them.
CeilingFinding copy_finding(const ProfileTotals& t, Category category, const std::optional<double>& ceiling,
                            const std::string& ceiling_name) {
  const double time_ns = per_step(t, time_of(t, category));
  const auto bytes_it = t.bytes.find(category);
  const double bytes = bytes_it == t.bytes.end() ? 0 : per_step(t, bytes_it->second) * (category == Category::memcpy_d2d ? 2 : 1);
  const double gbps = time_ns > 0 ? bytes / time_ns : 0;  // bytes per ns = GB/s
  std::string text = std::string(category_name(category)) + ": " + ms(time_ns) + " a step at " + format_number(gbps, 1) + " GB/s";
  if (!ceiling) return {text + "; no measured " + ceiling_name + " in the ceilings", 0};
  const double floor_ns = bytes / *ceiling;
  return {text + ", " + format_percent(gbps / *ceiling, 0) + " of the measured " + ceiling_name + " (" +
              format_number(*ceiling, 1) + " GB/s)",
          std::max(0.0, time_ns - floor_ns)};
}

// The best algbw at each size, by (collective, ranks).
using CurvePoints = std::map<std::pair<std::string, std::int64_t>, std::map<double, double>>;

// The ranks a row's run had, from the JSON report beside its CSV ("ranks":
// "8 (8 processes x 1 local)"); 0 where it is not recorded. `known` keeps
// each file's: a folder's rows come from a few files.
std::int64_t recorded_ranks(const std::string& csv_file, std::map<std::string, std::int64_t>& known) {
  const auto found = known.find(csv_file);
  if (found != known.end()) return found->second;
  std::int64_t ranks = 0;
  std::filesystem::path json = csv_file;
  json.replace_extension(".json");
  for (const auto& [key, value] : recorded_summary(json))
    if (key == "ranks") ranks = std::atoll(value.c_str());
  return known[csv_file] = ranks;
}

// A collective's row over the whole communicator: a --split group's rows
// and the per-rank rows are a part of it.
void add_collective_point(CurvePoints& curves, std::map<std::string, std::int64_t>& ranks_by_file,
                          const ResultRow& row) {
  const std::string collective = row.param("collective");
  const auto algbw = row.metric("algbw_GBps");
  if (collective.empty() || !algbw || !row.param("group").empty() || !row.param("rank").empty()) return;
  const double bytes = std::atof(row.param("bytes").c_str());
  if (bytes <= 0 || !usable_ceiling(*algbw)) return;
  double& best = curves[{collective, recorded_ranks(row.file, ranks_by_file)}][bytes];
  best = std::max(best, *algbw);
}

}  // namespace

Ceilings ceilings_from(const RunResults& run) {
  Ceilings c;
  c.source = run.source;
  CurvePoints curves;
  std::map<std::string, std::int64_t> ranks_by_file;
  for (const ResultRow& row : run.rows) {
    if (row.status != RowStatus::ok) continue;
    add_collective_point(curves, ranks_by_file, row);
    if (const auto t = row.metric("tflops"); t && usable_ceiling(*t) && row.param("result") == "mamf") {
      double& best = c.mamf_tflops[row.param("dtype")];
      best = std::max(best, *t);
    }
    if (const auto v = row.metric("hbm_GBps")) keep_best(c.hbm_GBps, *v);
    const std::string stage = row.param("stage");
    if (const auto v = row.metric("GBps"); v && row.param("memory") == "pinned") {
      if (stage.rfind("gpu.d2h", 0) == 0) keep_best(c.d2h_GBps, *v);
      if (stage.rfind("gpu.h2d", 0) == 0) keep_best(c.h2d_GBps, *v);
    }
  }
  for (const auto& [key, by_size] : curves) {
    CollectiveCurve curve{key.first, key.second, {}};
    for (const auto& [bytes, algbw] : by_size) curve.algbw_GBps.push_back({bytes, algbw});
    c.collective_curves.push_back(std::move(curve));
  }
  return c;
}

ProfileTotals total_over(const Trace& trace, const std::vector<StepWindow>& steps) {
  ProfileTotals t;
  t.steps = steps.size();
  t.gemm_calls_recorded = trace.gemm_calls_recorded;
  for (const StepBreakdown& b : break_down_steps(trace, steps)) {
    t.sum.wall_ns += b.wall_ns, t.sum.busy_ns += b.busy_ns;
    t.sum.idle_before_ns += b.idle_before_ns, t.sum.idle_between_ns += b.idle_between_ns;
    t.sum.idle_after_ns += b.idle_after_ns;
    t.sum.nccl_ns += b.nccl_ns, t.sum.nccl_overlap_ns += b.nccl_overlap_ns;
    for (const auto& [c, ns] : b.category_ns) t.sum.category_ns[c] += ns;
  }
  const auto in_steps = [&](std::int64_t at) { return step_at(steps, at).has_value(); };
  for (const Activity& a : trace.activities)
    if ((a.kind == ActivityKind::memcpy || a.kind == ActivityKind::memset) && in_steps(a.start_ns))
      t.bytes[category_of(a)] += a.bytes;
  for (const GemmCall& g : trace.gemms)
    if (in_steps(g.time_ns)) t.gemm_flop[g.dtype] += g.flop();
  t.nccl_calls_recorded = trace.nccl_calls_recorded;
  for (const NcclLaunch& launch : trace.nccl_launches)
    if (in_steps(launch.time_ns)) t.nccl_launches.push_back(launch);
  return t;
}

CeilingFinding idle_finding(const ProfileTotals& t) {
  const double idle = static_cast<double>(t.sum.idle_ns()), wall = static_cast<double>(t.sum.wall_ns);
  const std::pair<double, const char*> parts[] = {
      {static_cast<double>(t.sum.idle_between_ns), "between kernels (launch-bound: the host does not keep the GPU fed)"},
      {static_cast<double>(t.sum.idle_before_ns), "before the step's first GPU work (the host's work first: data loading, a sync)"},
      {static_cast<double>(t.sum.idle_after_ns), "after the step's last GPU work (the host ends the step: a sync, logging)"}};
  const auto& most = *std::max_element(std::begin(parts), std::end(parts),
                                       [](const auto& a, const auto& b) { return a.first < b.first; });
  if (wall <= 0) return {"the steps have no length: nothing to say of idle time", 0};
  if (idle <= 0) return {"the GPU is busy the whole step", 0};
  return {"the GPU is idle " + format_percent(idle / wall, 0) + " of the step, mostly " + most.second,
          idle / static_cast<double>(t.steps)};
}

std::vector<CeilingFinding> ceiling_findings(const ProfileTotals& t, const Ceilings& c) {
  std::vector<CeilingFinding> findings;
  if (t.steps == 0) return findings;
  if (time_of(t, Category::gemm) > 0) findings.push_back(gemm_finding(t, c));
  if (time_of(t, Category::nccl) > 0) findings.push_back(nccl_finding(t, c));
  if (time_of(t, Category::memcpy_h2d) > 0) findings.push_back(copy_finding(t, Category::memcpy_h2d, c.h2d_GBps, "pinned H2D bandwidth"));
  if (time_of(t, Category::memcpy_d2h) > 0) findings.push_back(copy_finding(t, Category::memcpy_d2h, c.d2h_GBps, "pinned D2H bandwidth"));
  if (time_of(t, Category::memcpy_d2d) > 0) findings.push_back(copy_finding(t, Category::memcpy_d2d, c.hbm_GBps, "HBM bandwidth"));
  findings.push_back(idle_finding(t));
  return findings;
}

std::optional<std::string> largest_gap(const std::vector<CeilingFinding>& findings) {
  const CeilingFinding* largest = nullptr;
  for (const CeilingFinding& f : findings)
    if (f.excess_ns > 0 && (!largest || f.excess_ns > largest->excess_ns)) largest = &f;
  if (!largest) return std::nullopt;
  return largest->text + " (" + ms(largest->excess_ns) + " a step lost)";
}

}  // namespace redline::profile
