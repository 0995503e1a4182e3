// Bad input from the user: always names the flag and the value, and maps to
// exit status 2 (DESIGN: exit codes).
#pragma once

#include <stdexcept>
#include <string>

namespace redline {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitCannotRun = 77;  // ctest's skip code
inline constexpr int kExitInterrupted = 130;

class UsageError : public std::runtime_error {
 public:
  UsageError(std::string flag, std::string value, std::string problem)
      : std::runtime_error(flag + " " + quote(value) + ": " + problem),
        flag_(std::move(flag)), value_(std::move(value)), problem_(std::move(problem)) {}
  // For problems that are not about one flag's value (a missing COMMAND).
  explicit UsageError(const std::string& problem) : std::runtime_error(problem), problem_(problem) {}

  const std::string& flag() const { return flag_; }
  const std::string& value() const { return value_; }
  const std::string& problem() const { return problem_; }  // what() without "flag 'value': "

 private:
  static std::string quote(const std::string& v) { return "'" + v + "'"; }
  std::string flag_, value_, problem_;
};

// A flag given '' (it would read as the flag left out), for every tool alike.
inline UsageError empty_value_error(std::string flag) {
  return UsageError(std::move(flag), "", "is empty; give a value or leave the flag out");
}

// The tool cannot run on this machine (no GPU, no NCCL): exit 77 with the
// reason, which ctest reports as skipped.
class CannotRun : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace redline
