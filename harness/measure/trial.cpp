#include "harness/measure/trial.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <stdexcept>

#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline {
namespace {

std::regex compile(const std::string& flag, const std::string& text) {
  try {
    return std::regex(text, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw UsageError(flag, text, std::string("not a valid regular expression: ") + e.what());
  }
}

std::regex compile_with_group(const std::string& flag, const std::string& text, const std::string& example) {
  std::regex pattern = compile(flag, text);
  if (pattern.mark_count() < 1)
    throw UsageError(flag, text, "needs a capture group around the number, e.g. '" + example + "'");
  return pattern;
}

std::string shortened(const std::string& line, std::size_t max_chars = 160) {
  return line.size() > max_chars ? line.substr(0, max_chars) + "..." : line;
}

// The line of output that contains position `pos`. A carriage return ends a
// line too: progress bars (tqdm) redraw a line with \r.
std::string line_at(const std::string& output, std::size_t pos, std::size_t max_chars) {
  auto begin = output.find_last_of("\r\n", pos);
  begin = begin == std::string::npos ? 0 : begin + 1;
  auto end = output.find_first_of("\r\n", pos);
  return shortened(output.substr(begin, end == std::string::npos ? std::string::npos : end - begin), max_chars);
}

// Why a failed trial ran out of memory, or nullopt when nothing says so.
// The first output line that says memory ran out, shortened.
std::optional<std::string> printed_oom(const std::vector<std::string>& lines, const TrialRules& rules) {
  for (const auto& line : lines)
    for (const auto& pattern : rules.oom_patterns)
      if (std::regex_search(line, pattern)) return shortened(line);
  return std::nullopt;
}

std::optional<std::string> oom_reason(const ChildResult& child, const std::vector<std::string>& lines,
                                      const TrialRules& rules) {
  if (auto printed = printed_oom(lines, rules)) return printed;
  const std::string tail = last_output_line(child.output);
  const std::string end = child.describe_end() + (tail.empty() ? "" : ": " + tail);
  if (child.oom_kills && *child.oom_kills > 0)
    return "the kernel's OOM killer ended a process of this trial (cgroup oom_kill), " + end;
  // The kernel's OOM killer ends a process with SIGKILL: host memory ran out.
  if (child.term_signal == SIGKILL)
    return "killed by SIGKILL (the kernel's OOM killer?)" + (tail.empty() ? "" : ": " + tail);
  // A wrapper (a shell, a launcher) passes its child's SIGKILL on as 128 + 9.
  if (child.exit_code == 128 + SIGKILL)
    return "exit status 137: a SIGKILL passed on (the kernel's OOM killer?)" + (tail.empty() ? "" : ": " + tail);
  return std::nullopt;
}

// The last match of --metric-regex: a throughput as printed.
TrialVerdict read_metric_regex(const std::vector<std::string>& lines, const std::regex& metric) {
  std::optional<std::string> last;
  for (const auto& line : lines)
    for (auto it = std::sregex_iterator(line.begin(), line.end(), metric); it != std::sregex_iterator(); ++it)
      last = (*it)[1].str();
  if (!last) return {PointStatus::error, std::nullopt, "--metric-regex matched nothing in the output"};
  const auto value = printed_number(*last);
  if (!value) return {PointStatus::error, std::nullopt, "--metric-regex captured '" + *last + "', not a number"};
  return {PointStatus::ok, ThroughputReading{ReadingKind::samples_per_s, *value, "--metric-regex", 1, 0}, ""};
}

// The throughput an ok trial printed, from the rules' regex or a trainer's line.
TrialVerdict read_throughput(const std::vector<std::string>& lines, const TrialRules& rules) {
  TrialVerdict verdict;
  try {
    if (rules.metric) {
      verdict = read_metric_regex(lines, *rules.metric);
    } else if (rules.step_time) {
      verdict.reading = summarize_readings(read_numbers(lines, *rules.step_time), rules.skip_steps,
                                           ReadingKind::step_seconds, "--step-time-regex");
      if (!verdict.reading)
        return {PointStatus::error, std::nullopt, "--step-time-regex matched nothing in the output"};
    } else {
      verdict.reading = read_trainer_throughput(lines, rules.skip_steps);
    }
  } catch (const std::invalid_argument& e) {
    return {PointStatus::error, std::nullopt,
            "--step-time-regex captured '" + std::string(e.what()) + "', not a number"};
  }
  // A throughput or step time of zero or less, or one too large for a double (inf, 1e400), is a
  // broken measurement, not a slow or fast one. It is an error, as an unreadable metric is: the
  // trial ran, but what it printed gives no throughput to compare.
  if (verdict.reading && !(std::isfinite(verdict.reading->value) && verdict.reading->value > 0))
    return {PointStatus::error, std::nullopt,
            verdict.reading->source + " read " + format_number(verdict.reading->value, 2) +
                ": a throughput or step time must be a finite positive number"};
  return verdict;
}

}  // namespace

const std::vector<std::string>& builtin_oom_patterns() {
  static const std::vector<std::string> patterns = {
      R"(CUDA out of memory)",
      R"(HIP out of memory)",
      R"(OutOfMemoryError)",
      R"(CUDA error: out of memory)",
      R"(DefaultCPUAllocator: can't allocate memory)",
      R"(DefaultCPUAllocator: not enough memory)",
      R"(\[enforce fail at alloc_cpu)",
      R"(ResourceExhaustedError)",
      R"(RESOURCE_EXHAUSTED)",
      R"(MemoryError\b)",
      R"(CUBLAS_STATUS_ALLOC_FAILED)",
      R"(cudaErrorMemoryAllocation)",
      R"(std::bad_alloc)",
  };
  return patterns;
}

TrialRules make_trial_rules(const std::vector<std::string>& extra_oom_regexes, const MetricOptions& metric) {
  TrialRules rules;
  for (const auto& p : builtin_oom_patterns()) rules.oom_patterns.push_back(compile("built-in OOM pattern", p));
  for (const auto& p : extra_oom_regexes) rules.oom_patterns.push_back(compile("--oom-regex", p));
  if (!metric.metric_regex.empty() && !metric.step_time_regex.empty())
    throw UsageError("--step-time-regex", metric.step_time_regex, "cannot be combined with --metric-regex: give one");
  if (!metric.metric_regex.empty())
    rules.metric = compile_with_group("--metric-regex", metric.metric_regex, "throughput: ([0-9.]+)");
  const auto unit = step_time_unit_seconds(metric.step_time_unit);
  if (!unit) throw UsageError("--step-time-unit", metric.step_time_unit, "must be s, ms or us");
  if (!metric.step_time_regex.empty())
    rules.step_time = LineFormat{"--step-time-regex",
                                 compile_with_group("--step-time-regex", metric.step_time_regex, "time ([0-9.]+)ms"),
                                 ReadingKind::step_seconds,
                                 *unit,
                                 true,
                                 "",
                                 ""};
  if (metric.skip_steps < 0) throw UsageError("--skip-steps", std::to_string(metric.skip_steps), "must be 0 or more");
  rules.skip_steps = metric.skip_steps;
  return rules;
}

std::string last_output_line(const std::string& output, std::size_t max_chars) {
  auto end = output.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  return line_at(output, end, max_chars);
}

TrialVerdict judge_trial(const ChildResult& child, const TrialRules& rules) {
  if (!child.started) return {PointStatus::error, std::nullopt, "could not start: " + child.start_error};
  if (child.interrupted) return {PointStatus::skipped, std::nullopt, "interrupted"};
  const std::vector<std::string> lines = output_lines(child.output);
  if (child.timed_out) {
    // A rank that ran out of memory leaves the others waiting in a
    // collective until --timeout: the trial is out of memory, not slow. (The
    // end itself says nothing: --timeout's own signal ended it.)
    if (auto printed = printed_oom(lines, rules))
      return {PointStatus::oom, std::nullopt, *printed + " (then hung until --timeout)"};
    return {PointStatus::timeout, std::nullopt, "no result before --timeout"};
  }
  if (!child.succeeded()) {
    if (auto reason = oom_reason(child, lines, rules)) return {PointStatus::oom, std::nullopt, *reason};
    const std::string tail = last_output_line(child.output);
    return {PointStatus::error, std::nullopt, child.describe_end() + (tail.empty() ? "" : ": " + tail)};
  }
  return read_throughput(lines, rules);
}

}  // namespace redline
