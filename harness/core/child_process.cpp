#include "harness/core/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/interrupt.hpp"
#include "harness/core/process_memory.hpp"

extern char** environ;

namespace redline {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Only async-signal-safe calls between fork and exec.
[[noreturn]] void exec_child(int output_fd, int error_fd, std::vector<char*>& argv, std::vector<char*>& envp) {
  setpgid(0, 0);
  dup2(output_fd, STDOUT_FILENO);
  dup2(output_fd, STDERR_FILENO);
  const int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) {
    dup2(devnull, STDIN_FILENO);
    close(devnull);
  }
  // Our own handlers are replaced by exec, but a blocked mask would survive.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execvpe(argv[0], argv.data(), envp.data());
  const int err = errno;
  [[maybe_unused]] auto n = write(error_fd, &err, sizeof err);
  _exit(127);
}

// The child's environment: ours plus extra_env (which wins); ours stays
// untouched.
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& extra_env) {
  std::vector<std::string> entries;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const auto name = entry.substr(0, entry.find('='));
    const bool overridden =
        std::any_of(extra_env.begin(), extra_env.end(), [&](const auto& kv) { return kv.first == name; });
    if (!overridden) entries.emplace_back(entry);
  }
  for (const auto& [name, value] : extra_env) entries.push_back(name + "=" + value);
  return entries;
}

// A null-terminated array of pointers into `strings`, for exec.
std::vector<char*> c_array(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// exec_child writes errno to the close-on-exec pipe when exec fails; a
// successful exec closes it with nothing written.
std::optional<int> exec_error(int error_fd) {
  int exec_errno = 0;
  ssize_t got;
  do got = read(error_fd, &exec_errno, sizeof exec_errno);
  while (got < 0 && errno == EINTR);
  close(error_fd);
  if (got == sizeof exec_errno) return exec_errno;
  return std::nullopt;
}

// A file descriptor that becomes readable when `pid` exits (Linux 5.3+), so
// the wait ends at the exit itself; -1 where the kernel has none.
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

// The parent's side of a started child: reads its output until the pipe
// closes, reaps it the moment it exits, samples its memory, and stops its
// process group on a timeout or Ctrl-C.
class ChildWatch {
 public:
  ChildWatch(pid_t pid, int output_fd, const ChildSpec& spec, ChildResult& result, Clock::time_point start)
      : pid_(pid), pidfd_(open_pidfd(pid)), output_fd_(output_fd), spec_(spec), result_(result), start_(start) {}
  ~ChildWatch() {
    if (pidfd_ >= 0) close(pidfd_);
  }
  ChildWatch(const ChildWatch&) = delete;
  ChildWatch& operator=(const ChildWatch&) = delete;

  void run() {
    // While we are stopping it (kill_sent), the group gets the whole schedule
    // even after its leader exits: a wrapper shell dies on the first SIGTERM
    // while the tool it runs is still cleaning up.
    while (!eof_ || !exited_ || (kill_sent_ && !group_done_)) {
      wait_for_event();
      reap();
      if (exited_ && kill_sent_ && !group_done_ && kill(-pid_, 0) != 0 && errno == ESRCH) group_done_ = true;
      if (!exited_ && spec_.sample_seconds > 0 && seconds_since(last_sample_) >= spec_.sample_seconds) sample();
      // A grandchild that left the group may hold the pipe: stop reading.
      if (exited_ && !eof_ && seconds_since(*exited_at_) > spec_.kill_grace_seconds) eof_ = true;
      if (exited_ && (!kill_sent_ || group_done_)) continue;
      stop_when_due();
    }
  }

  bool status_known() const { return status_known_; }
  int status() const { return status_; }
  Clock::time_point exited_at() const { return *exited_at_; }
  std::optional<std::uint64_t> peak_rss_bytes() const {
    if (!status_known_) return std::nullopt;
    // ru_maxrss is in KiB on Linux.
    return std::max(static_cast<std::uint64_t>(usage_.ru_maxrss) * 1024, peak_group_rss_);
  }

 private:
  // Until output arrives, the child exits, or the next thing is due: a
  // sample, the time limit, the next step of stopping it, or a look at the
  // Ctrl-C flag (at least every 100 ms).
  void wait_for_event() {
    pollfd fds[2];
    nfds_t n = 0;
    const bool reading = !eof_;
    if (reading) fds[n++] = {output_fd_, POLLIN, 0};
    if (!exited_ && pidfd_ >= 0) fds[n++] = {pidfd_, POLLIN, 0};
    double wait = kill_sent_ || exited_ ? 0.02 : 0.1;
    if (!exited_ && pidfd_ < 0) wait = 0.001;  // no pidfd: look for the exit every millisecond
    if (!exited_ && spec_.sample_seconds > 0)
      wait = std::min(wait, std::max(0.0, spec_.sample_seconds - seconds_since(last_sample_)));
    if (spec_.timeout_seconds > 0 && !kill_sent_)
      wait = std::min(wait, std::max(0.0, spec_.timeout_seconds - seconds_since(start_)));
    const int ready = poll(fds, n, static_cast<int>(std::ceil(wait * 1000)));
    if (ready > 0 && reading && fds[0].revents != 0) read_output();
  }

  void reap() {
    if (exited_) return;
    const pid_t w = wait4(pid_, &status_, WNOHANG, &usage_);
    if (w != pid_ && !(w < 0 && errno == ECHILD)) return;
    status_known_ = w == pid_;
    exited_ = true;
    exited_at_ = Clock::now();
    // Leftovers of a child that ended on its own would hold the pipe (and
    // the GPU) open.
    if (!kill_sent_) kill(-pid_, SIGKILL);
  }

  void sample() {
    last_sample_ = Clock::now();
    const GroupMemory group = read_process_group(pid_);
    peak_group_rss_ = std::max(peak_group_rss_, group.rss_bytes);
    if (spec_.on_sample && !group.pids.empty()) spec_.on_sample(group.pids);
  }

  // One read of what is there; keeps the last output_limit bytes.
  void read_output() {
    const ssize_t n = read(output_fd_, buf_, sizeof buf_);
    if (n > 0) {
      result_.output.append(buf_, static_cast<std::size_t>(n));
      if (spec_.on_output) spec_.on_output(std::string_view(buf_, static_cast<std::size_t>(n)));
      if (result_.output.size() > spec_.output_limit) {
        result_.output.erase(0, result_.output.size() - spec_.output_limit);
        result_.output_truncated = true;
      }
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      eof_ = true;
    }
  }

  // SIGTERM on a timeout or Ctrl-C; a second SIGTERM after the grace time;
  // SIGKILL kSecondTermGraceSeconds after that.
  void stop_when_due() {
    const bool over_time = spec_.timeout_seconds > 0 && seconds_since(start_) > spec_.timeout_seconds;
    if ((over_time || interrupted()) && !kill_sent_) {
      result_.timed_out = over_time;
      result_.interrupted = !over_time;
      kill(-pid_, SIGTERM);
      kill_sent_ = Clock::now();
    } else if (kill_sent_ && !second_term_sent_ && seconds_since(*kill_sent_) > spec_.kill_grace_seconds) {
      // A second SIGTERM before SIGKILL: redline's own tools (and many
      // others) take it as "quit now" and still remove their scratch files,
      // which a SIGKILL would leave behind.
      kill(-pid_, SIGTERM);
      second_term_sent_ = Clock::now();
    } else if (second_term_sent_ && seconds_since(*second_term_sent_) > kSecondTermGraceSeconds) {
      kill(-pid_, SIGKILL);
      group_done_ = true;
    }
  }

  const pid_t pid_;
  const int pidfd_;
  const int output_fd_;
  const ChildSpec& spec_;
  ChildResult& result_;
  const Clock::time_point start_;
  Clock::time_point last_sample_ = start_;
  bool eof_ = false, exited_ = false, group_done_ = false;
  int status_ = 0;
  bool status_known_ = true;
  rusage usage_{};
  std::uint64_t peak_group_rss_ = 0;
  std::optional<Clock::time_point> kill_sent_, second_term_sent_, exited_at_;
  char buf_[65536];
};

}  // namespace

std::string ChildResult::describe_end() const {
  if (!started) return "could not start: " + start_error;
  if (timed_out) return "timed out";
  if (interrupted) return "interrupted";
  if (term_signal) return "killed by signal " + std::to_string(term_signal) + " (" + strsignal(term_signal) + ")";
  return "exit status " + std::to_string(exit_code);
}

std::optional<std::string> find_executable(const std::string& name) {
  auto executable = [](const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
  };
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) return executable(name) ? std::optional(name) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t begin = 0;
  while (begin <= dirs.size()) {
    auto end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    // An empty PATH entry means the current directory.
    const std::filesystem::path dir(end == begin ? std::string(".") : dirs.substr(begin, end - begin));
    const std::string candidate = (dir / name).string();
    if (executable(candidate)) return candidate;
    begin = end + 1;
  }
  return std::nullopt;
}

ChildResult run_child(const ChildSpec& spec) {
  ChildResult result;
  if (spec.argv.empty()) {
    result.start_error = "empty command";
    return result;
  }
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.start_error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  // Build argv and the environment before fork: no allocation in the child.
  std::vector<std::string> args = spec.argv, env_entries = child_environment(spec.extra_env);
  std::vector<char*> argv = c_array(args), envp = c_array(env_entries);

  // With SIGCHLD ignored (inherited from whoever started us) the kernel
  // reaps children itself and waitpid could never see this one exit.
  signal(SIGCHLD, SIG_DFL);
  const std::optional<std::uint64_t> oom_kills_before = cgroup_oom_kill_count();
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) exec_child(out_pipe[1], err_pipe[1], argv, envp);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    result.start_error = std::string("fork: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(err_pipe[0]);
    return result;
  }
  setpgid(pid, pid);  // also from the parent, so kill(-pid) works at once
  set_running_child_group(pid);
  const std::optional<int> exec_errno = exec_error(err_pipe[0]);

  ChildWatch watch(pid, out_pipe[0], spec, result, start);
  watch.run();
  close(out_pipe[0]);
  set_running_child_group(0);
  // Until the child exited: a daemon it left behind may hold the output open longer.
  result.wall_seconds = std::chrono::duration<double>(watch.exited_at() - start).count();

  if (exec_errno) {
    result.start_error = std::strerror(*exec_errno);
    return result;
  }
  result.started = true;
  if (const auto after = cgroup_oom_kill_count(); after && oom_kills_before)
    result.oom_kills = *after >= *oom_kills_before ? *after - *oom_kills_before : 0;
  if (!watch.status_known()) return result;  // exit_code stays -1: not a success
  result.peak_rss_bytes = watch.peak_rss_bytes();
  if (WIFEXITED(watch.status())) result.exit_code = WEXITSTATUS(watch.status());
  if (WIFSIGNALED(watch.status())) result.term_signal = WTERMSIG(watch.status());
  return result;
}

}  // namespace redline
