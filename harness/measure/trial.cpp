#include "harness/measure/trial.hpp"

#include <algorithm>
#include <csignal>

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

// The line of output that contains position `pos`. A carriage return ends a
// line too: progress bars (tqdm) redraw a line with \r.
std::string line_at(const std::string& output, std::size_t pos, std::size_t max_chars) {
  auto begin = output.find_last_of("\r\n", pos);
  begin = begin == std::string::npos ? 0 : begin + 1;
  auto end = output.find_first_of("\r\n", pos);
  std::string line = output.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  if (line.size() > max_chars) line = line.substr(0, max_chars) + "...";
  return line;
}

}  // namespace

const std::vector<std::string>& builtin_oom_patterns() {
  static const std::vector<std::string> patterns = {
      R"(CUDA out of memory)",      R"(OutOfMemoryError)",       R"(CUDA error: out of memory)",
      R"(RESOURCE_EXHAUSTED)",      R"(cudaErrorMemoryAllocation)", R"(std::bad_alloc)",
  };
  return patterns;
}

TrialRules make_trial_rules(const std::vector<std::string>& extra_oom_regexes, const std::string& metric_regex) {
  TrialRules rules;
  for (const auto& p : builtin_oom_patterns()) rules.oom_patterns.push_back(compile("built-in OOM pattern", p));
  for (const auto& p : extra_oom_regexes) rules.oom_patterns.push_back(compile("--oom-regex", p));
  if (!metric_regex.empty()) {
    rules.metric = compile("--metric-regex", metric_regex);
    if (rules.metric->mark_count() < 1)
      throw UsageError("--metric-regex", metric_regex,
                       "needs a capture group around the number, e.g. 'throughput: ([0-9.]+)'");
  }
  return rules;
}

std::string last_output_line(const std::string& output, std::size_t max_chars) {
  auto end = output.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  return line_at(output, end, max_chars);
}

namespace {

// Patterns match within one line of output, and a line is cut at this many
// characters first: std::regex recurses per character matched, so an
// unbounded line (a progress bar, a dump) could overflow the stack.
constexpr std::size_t kMaxLineChars = 4096;

// Calls fn(line) for each line; \r ends a line too (progress bars).
template <typename Fn>
void for_each_line(const std::string& output, Fn&& fn) {
  std::size_t begin = 0;
  while (begin < output.size()) {
    auto end = output.find_first_of("\r\n", begin);
    if (end == std::string::npos) end = output.size();
    if (end > begin) fn(output.substr(begin, std::min(end - begin, kMaxLineChars)));
    begin = end + 1;
  }
}

}  // namespace

TrialVerdict judge_trial(const ChildResult& child, const TrialRules& rules) {
  TrialVerdict verdict;
  if (!child.started) return {PointStatus::error, std::nullopt, "could not start: " + child.start_error};
  if (child.interrupted) return {PointStatus::skipped, std::nullopt, "interrupted"};
  if (child.timed_out) return {PointStatus::timeout, std::nullopt, "no result before --timeout"};

  if (!child.succeeded()) {
    std::optional<std::string> oom_line;
    for_each_line(child.output, [&](const std::string& line) {
      for (const auto& pattern : rules.oom_patterns)
        if (!oom_line && std::regex_search(line, pattern)) oom_line = line.size() > 160 ? line.substr(0, 160) + "..." : line;
    });
    if (oom_line) return {PointStatus::oom, std::nullopt, *oom_line};
    // The kernel's OOM killer ends a process with SIGKILL: host memory ran out.
    if (child.term_signal == SIGKILL)
      return {PointStatus::oom, std::nullopt, "killed by SIGKILL (the kernel's OOM killer?)"};
    const std::string tail = last_output_line(child.output);
    return {PointStatus::error, std::nullopt, child.describe_end() + (tail.empty() ? "" : ": " + tail)};
  }

  if (rules.metric) {
    std::optional<std::string> last;
    for_each_line(child.output, [&](const std::string& line) {
      for (auto it = std::sregex_iterator(line.begin(), line.end(), *rules.metric); it != std::sregex_iterator(); ++it)
        last = (*it)[1].str();
    });
    if (!last) return {PointStatus::error, std::nullopt, "--metric-regex matched nothing in the output"};
    std::string digits;
    for (char c : *last)
      if (c != ',' && c != '_') digits += c;  // "12,345.6" as printed by humans
    try {
      verdict.metric = parse_number("--metric-regex", digits);
    } catch (const UsageError&) {
      return {PointStatus::error, std::nullopt, "--metric-regex captured '" + *last + "', not a number"};
    }
    // A throughput of zero or less is a broken measurement, not a slow one.
    if (!(*verdict.metric > 0))
      return {PointStatus::error, std::nullopt, "--metric-regex captured '" + *last + "': a throughput must be positive"};
  }
  return verdict;
}

}  // namespace redline
