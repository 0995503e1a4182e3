#include "harness/profile/profile_report.hpp"

#include <stdexcept>

#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline::profile {
namespace {

double ms(std::int64_t ns) { return static_cast<double>(ns) / 1e6; }

double pct(std::int64_t part, std::int64_t whole) { return whole > 0 ? 100.0 * part / whole : 0; }

void add_step_rows(Report& report, std::size_t index, const StepBreakdown& b) {
  Row step;
  step.param("step", std::to_string(index)).param("category", "step");
  step.metric("wall_ms", ms(b.wall_ns)).metric("busy_pct", pct(b.busy_ns, b.wall_ns)).metric("idle_pct", pct(b.idle_ns(), b.wall_ns));
  step.metric("idle_before_ms", ms(b.idle_before_ns)).metric("idle_between_ms", ms(b.idle_between_ns));
  step.metric("idle_after_ms", ms(b.idle_after_ns));
  if (b.nccl_ns > 0) step.metric("nccl_overlap_pct", pct(b.nccl_overlap_ns, b.nccl_ns));
  report.rows.push_back(std::move(step));
  for (const Category c : kCategories) {
    const auto it = b.category_ns.find(c);
    if (it == b.category_ns.end()) continue;
    Row row;
    row.param("step", std::to_string(index)).param("category", category_name(c));
    row.metric("time_ms", ms(it->second)).metric("share_pct", pct(it->second, b.wall_ns));
    report.rows.push_back(std::move(row));
  }
}

std::string categories_line(const ProfileTotals& t) {
  std::string line;
  for (const Category c : kCategories) {
    const auto it = t.sum.category_ns.find(c);
    if (it == t.sum.category_ns.end()) continue;
    line += (line.empty() ? "" : ", ") + std::string(category_name(c)) + " " +
            format_number(ms(it->second) / static_cast<double>(t.steps), 2) + " ms (" +
            format_number(pct(it->second, t.sum.wall_ns), 0) + "%)";
  }
  return line;
}

void add_top_kernels(Report& report, const std::vector<KernelTotal>& top, std::size_t steps) {
  for (std::size_t i = 0; i < top.size(); ++i) {
    const KernelTotal& k = top[i];
    const std::string name = k.name.size() > 90 ? k.name.substr(0, 87) + "..." : k.name;
    report.summary.emplace_back("kernel " + std::to_string(i + 1),
                                format_number(ms(k.total_ns) / static_cast<double>(steps), 3) + " ms a step, " +
                                    std::to_string(k.count) + " calls of " + format_number(k.mean_ns() / 1e3, 1) +
                                    " us, " + category_name(k.category) + ": " + name);
  }
}

void add_ceilings(Report& report, const ProfileTotals& totals, const std::optional<Ceilings>& ceilings) {
  if (!ceilings) {
    report.summary.emplace_back("idle", idle_finding(totals).text);
    report.summary.emplace_back("ceilings", "none given (--ceilings RUN_DIR): the categories are not set against "
                                            "what this GPU was measured to do");
    return;
  }
  report.summary.emplace_back("ceilings", ceilings->source + (ceilings->empty() ? " (holds no ceiling this profile uses)" : ""));
  const std::vector<CeilingFinding> findings = ceiling_findings(totals, *ceilings);
  for (const CeilingFinding& f : findings) report.summary.emplace_back("against the ceilings", f.text);
  if (const auto gap = largest_gap(findings)) report.summary.emplace_back("largest gap", *gap);
}

}  // namespace

void add_profile(Report& report, const ProfileInput& input) {
  if (input.found.steps.empty()) throw std::runtime_error("no steps found: " + input.found.why_none);
  const std::vector<StepWindow> steps = steps_to_profile(input.found.steps, input.skip, input.limit);
  if (steps.empty())
    throw UsageError("--skip", std::to_string(input.skip),
                     "skips all " + std::to_string(input.found.steps.size()) + " steps found (by " +
                         input.found.method + "): give a smaller one");
  const std::vector<StepBreakdown> breakdowns = break_down_steps(input.trace, steps);
  for (std::size_t i = 0; i < steps.size(); ++i) add_step_rows(report, input.skip + i, breakdowns[i]);
  const ProfileTotals totals = total_over(input.trace, steps);
  report.summary.emplace_back("steps", std::to_string(input.found.steps.size()) + " found by " + input.found.method +
                                           "; " + std::to_string(steps.size()) + " profiled after skipping " +
                                           std::to_string(input.skip));
  report.summary.emplace_back("step", format_number(ms(totals.sum.wall_ns) / static_cast<double>(steps.size()), 2) +
                                          " ms (mean wall time); GPU busy " +
                                          format_number(pct(totals.sum.busy_ns, totals.sum.wall_ns), 0) + "%");
  report.summary.emplace_back("categories", categories_line(totals));
  add_top_kernels(report, top_kernels(input.trace, steps, input.top), steps.size());
  add_ceilings(report, totals, input.ceilings);
  if (input.trace.dropped > 0)
    report.summary.emplace_back("dropped", std::to_string(input.trace.dropped) +
                                               " records lost (CUPTI's buffers were full): the times above are low");
  for (const std::string& problem : input.trace.problems) report.summary.emplace_back("trace problem", problem);
}

}  // namespace redline::profile
