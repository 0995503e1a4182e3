#include "harness/core/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "harness/core/interrupt.hpp"

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
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The child's environment is ours plus extra_env; ours stays untouched.
  std::vector<std::string> env_entries;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const auto name = entry.substr(0, entry.find('='));
    const bool overridden = std::any_of(spec.extra_env.begin(), spec.extra_env.end(),
                                        [&](const auto& kv) { return kv.first == name; });
    if (!overridden) env_entries.emplace_back(entry);
  }
  for (const auto& [name, value] : spec.extra_env) env_entries.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& entry : env_entries) envp.push_back(entry.data());
  envp.push_back(nullptr);

  // With SIGCHLD ignored (inherited from whoever started us) the kernel
  // reaps children itself and waitpid could never see this one exit.
  signal(SIGCHLD, SIG_DFL);
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

  int exec_errno = 0;
  ssize_t got;
  do got = read(err_pipe[0], &exec_errno, sizeof exec_errno);
  while (got < 0 && errno == EINTR);
  const bool exec_failed = got == sizeof exec_errno;
  close(err_pipe[0]);

  bool eof = false, exited = false;
  int status = 0;
  bool status_known = true;
  std::optional<Clock::time_point> kill_sent, second_term_sent, exited_at;
  // While we are stopping it (kill_sent), the group gets the whole schedule
  // even after its leader exits: a wrapper shell dies on the first SIGTERM
  // while the tool it runs is still cleaning up.
  bool group_done = false;
  char buf[65536];
  while (!eof || !exited || (kill_sent && !group_done)) {
    if (!exited) {
      const pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid || (w < 0 && errno == ECHILD)) {
        status_known = w == pid;
        exited = true;
        exited_at = Clock::now();
        // Leftovers of a child that ended on its own would hold the pipe
        // (and the GPU) open.
        if (!kill_sent) kill(-pid, SIGKILL);
      }
    }
    if (exited && kill_sent && !group_done && kill(-pid, 0) != 0 && errno == ESRCH) group_done = true;
    if (!eof) {
      pollfd pfd{out_pipe[0], POLLIN, 0};
      const int ready = poll(&pfd, 1, 50);
      if (ready > 0) {
        const ssize_t n = read(out_pipe[0], buf, sizeof buf);
        if (n > 0) {
          result.output.append(buf, static_cast<std::size_t>(n));
          if (spec.on_output) spec.on_output(std::string_view(buf, static_cast<std::size_t>(n)));
          if (result.output.size() > spec.output_limit) {
            result.output.erase(0, result.output.size() - spec.output_limit);
            result.output_truncated = true;
          }
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          eof = true;
        }
      }
    } else if (!exited || !group_done) {
      usleep(20000);
    }
    // A grandchild that left the group may hold the pipe: stop reading.
    if (exited && !eof && seconds_since(*exited_at) > spec.kill_grace_seconds) eof = true;
    if (exited && (!kill_sent || group_done)) continue;
    const bool over_time = spec.timeout_seconds > 0 && seconds_since(start) > spec.timeout_seconds;
    if ((over_time || interrupted()) && !kill_sent) {
      result.timed_out = over_time;
      result.interrupted = !over_time;
      kill(-pid, SIGTERM);
      kill_sent = Clock::now();
    } else if (kill_sent && !second_term_sent && seconds_since(*kill_sent) > spec.kill_grace_seconds) {
      // A second SIGTERM before SIGKILL: redline's own tools (and many
      // others) take it as "quit now" and still remove their scratch files,
      // which a SIGKILL would leave behind.
      kill(-pid, SIGTERM);
      second_term_sent = Clock::now();
    } else if (second_term_sent && seconds_since(*second_term_sent) > kSecondTermGraceSeconds) {
      kill(-pid, SIGKILL);
      group_done = true;
    }
  }
  close(out_pipe[0]);
  set_running_child_group(0);
  // Until the child exited: a daemon it left behind may hold the output open longer.
  result.wall_seconds = std::chrono::duration<double>(*exited_at - start).count();

  if (exec_failed) {
    result.start_error = std::strerror(exec_errno);
    return result;
  }
  result.started = true;
  if (!status_known) return result;  // exit_code stays -1: not a success
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  return result;
}

}  // namespace redline
