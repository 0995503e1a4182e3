#include "bench/profile/output_marks.hpp"

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "harness/core/regex_text.hpp"

namespace redline::profile {

void OutputMarks::take(std::string_view chunk) {
  take_at(chunk, std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now().time_since_epoch())
                     .count());
}

void OutputMarks::take_at(std::string_view chunk, std::int64_t now_ns) {
  std::cerr << chunk << std::flush;
  if (!pattern) return;
  partial.append(chunk);
  bool matched_in_chunk = false;
  for (auto end = partial.find_first_of("\r\n"); end != std::string::npos; end = partial.find_first_of("\r\n")) {
    // An empty line is no step's (the '\n' of a "\r\n" ending among them).
    const std::string_view line = regex_safe_prefix(std::string_view(partial).substr(0, end));
    if (end > 0 && std::regex_search(line.begin(), line.end(), *pattern)) {
      if (matched_in_chunk) ++together;
      matched_in_chunk = true;
      marks.push_back(now_ns);
    }
    partial.erase(0, end + 1);
  }
}

std::pair<std::string, std::string> buffered_output_warning(const OutputMarks& marks) {
  return {"warning (step lines)",
          std::to_string(marks.together) + " of the " + std::to_string(marks.marks.size()) +
              " lines matching --step-regex arrived in one read with the line before, so their steps merged: the "
              "program's output is buffered (stdout is a pipe); flush it after each step line (Python: "
              "PYTHONUNBUFFERED=1, which redline sets unless the environment sets it)"};
}

void unbuffer_python_output(std::vector<std::pair<std::string, std::string>>& env) {
  if (std::getenv("PYTHONUNBUFFERED") == nullptr) env.emplace_back("PYTHONUNBUFFERED", "1");
}

}  // namespace redline::profile
