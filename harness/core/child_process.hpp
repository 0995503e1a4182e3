// Runs a command as a child process in its own process group, with a time
// limit, capturing its stdout and stderr together. When the command ends (or
// is killed), whatever it left running in its group is killed too, so no
// stray worker keeps GPU memory into the next trial.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redline {

struct ChildSpec {
  std::vector<std::string> argv;                                // argv[0] looked up in PATH
  std::vector<std::pair<std::string, std::string>> extra_env;  // added to our environment
  double timeout_seconds = 0;                                    // 0: no limit
  // On a timeout or Ctrl-C: SIGTERM, after this long a second SIGTERM (quit
  // now), and kSecondTermGraceSeconds (interrupt.hpp) after that SIGKILL.
  double kill_grace_seconds = 2;
  std::size_t output_limit = 8u << 20;  // keep the last bytes of output
  // Called with each chunk of output as it arrives (live echo); may be empty.
  std::function<void(std::string_view)> on_output;
  // While it runs, every this many seconds (0: never), the resident memory
  // of its process group is read (the peak is kept), and on_sample, when
  // set, is called with the group's processes (to read their GPU memory).
  double sample_seconds = 0.1;
  std::function<void(const std::vector<int>& pids)> on_sample;
};

struct ChildResult {
  bool started = false;
  std::string start_error;  // why exec failed ("No such file or directory")
  int exit_code = -1;       // when it exited normally
  int term_signal = 0;      // when a signal ended it
  bool timed_out = false;
  bool interrupted = false;  // we stopped it because the user pressed Ctrl-C
  std::string output;        // stdout and stderr interleaved (tail if over the limit)
  bool output_truncated = false;
  double wall_seconds = 0;   // from start to exit, taken when the exit is reported (not polled)
  // Peak resident memory of its process tree: the larger of the kernel's
  // high-water mark for the child and the descendants it waited for (wait4's
  // ru_maxrss, which also holds our own memory as copied into the child
  // before exec) and the largest sum over its process group at a sample.
  // nullopt when it did not start or could not be reaped.
  std::optional<std::uint64_t> peak_rss_bytes;
  // OOM kills counted in our memory cgroup while it ran (nullopt: no
  // readable counter); other processes in the cgroup count too.
  std::optional<std::uint64_t> oom_kills;

  bool succeeded() const { return started && !timed_out && !interrupted && term_signal == 0 && exit_code == 0; }
  std::string describe_end() const;  // "exit status 1", "killed by signal 9 (Killed)", ...
};

ChildResult run_child(const ChildSpec& spec);

// The full path `name` resolves to through PATH (or as given, if it has a
// slash), when it is an executable file.
std::optional<std::string> find_executable(const std::string& name);

}  // namespace redline
