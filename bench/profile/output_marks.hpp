// A profiled program's output as `redline profile --step-regex` reads it:
// echoed to stderr (stdout carries the profile), and the steady-clock time
// of each whole line matching the step pattern, which ends a step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redline::profile {

// A line ends at '\n', or at '\r' as a progress bar redraws its line.
// Lines that arrive in one read share its time: a program whose output is
// buffered (its stdout is a pipe here) hands over many steps' lines at
// once, and those steps merge; `together` counts them.
struct OutputMarks {
  const std::regex* pattern = nullptr;  // none: echo only
  std::string partial;                  // a line not yet ended
  std::vector<std::int64_t> marks;      // CLOCK_MONOTONIC ns, one per matching line
  std::size_t together = 0;             // matching lines that came in a read with an earlier one

  void take(std::string_view chunk);
  void take_at(std::string_view chunk, std::int64_t now_ns);  // take, at a given time
  bool timed_apart() const { return together == 0; }
};

// The summary line for marks that came together: their steps merged, and why.
std::pair<std::string, std::string> buffered_output_warning(const OutputMarks& marks);

// Adds PYTHONUNBUFFERED=1 to a child's environment unless this process's
// environment sets the variable: a pipe makes Python buffer its output in
// blocks, and step lines are timed as they arrive. (C's stdio must flush.)
void unbuffer_python_output(std::vector<std::pair<std::string, std::string>>& env);

}  // namespace redline::profile
