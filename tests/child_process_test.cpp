// Real child processes: exit codes, signals, captured output, time limits
// that kill the whole process group, exec failures and the environment.
#include "harness/core/child_process.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/interrupt.hpp"
#include "harness/core/process_memory.hpp"
#include "tests/support.hpp"

namespace redline {
namespace {

namespace fs = std::filesystem;

ChildSpec shell(const std::string& script, double timeout = 60) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.timeout_seconds = timeout;
  return spec;
}

// Alive and not a zombie: a killed process whose parent has not reaped it
// yet no longer runs.
bool running(pid_t pid) {
  if (kill(pid, 0) != 0) return errno != ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string content;
  std::getline(stat, content);
  const auto close = content.rfind(')');
  if (close == std::string::npos || close + 2 >= content.size()) return false;  // gone meanwhile
  const char state = content[close + 2];
  return state != 'Z' && state != 'X';
}

// Waits (up to 10 s) for a killed process to stop: SIGKILL is delivered
// asynchronously. This checks that it dies, not how fast.
bool stops(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (!running(pid)) return true;
    usleep(50000);
  }
  return false;
}

pid_t read_pid(const fs::path& file) {
  std::ifstream in(file);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

class ChildProcessTest : public redline::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    const char* path = std::getenv("PATH");
    saved_path_ = path ? std::optional<std::string>(path) : std::nullopt;
  }
  void TearDown() override {
    set_interrupted_for_testing(false);
    if (saved_path_) setenv("PATH", saved_path_->c_str(), 1);
    for (const char* name : {"REDLINE_CHILD_TEST_A", "REDLINE_CHILD_TEST_B", "REDLINE_CHILD_TEST_PRESET"})
      unsetenv(name);
    TempDirTest::TearDown();
  }
  void make_file(const fs::path& path, const std::string& content, fs::perms perms) {
    std::ofstream(path) << content;
    fs::permissions(path, perms);
  }
  std::optional<std::string> saved_path_;
};

TEST_F(ChildProcessTest, TrueSucceeds) {
  ChildSpec spec;
  spec.argv = {"true"};
  const ChildResult r = run_child(spec);
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.start_error, "");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.interrupted);
  EXPECT_TRUE(r.succeeded());
  EXPECT_EQ(r.output, "");
  EXPECT_EQ(r.describe_end(), "exit status 0");
  EXPECT_TRUE(std::isfinite(r.wall_seconds) && r.wall_seconds > 0) << "a wall time is recorded";
}

TEST_F(ChildProcessTest, ExitCodes) {
  ChildSpec f;
  f.argv = {"false"};
  ChildResult r = run_child(f);
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(r.succeeded());

  r = run_child(shell("exit 3"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_FALSE(r.succeeded());
  EXPECT_EQ(r.describe_end(), "exit status 3");

  EXPECT_EQ(run_child(shell("exit 255")).exit_code, 255);
}

TEST_F(ChildProcessTest, EndedBySignal) {
  ChildResult r = run_child(shell("kill -TERM $$"));
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.term_signal, SIGTERM);
  EXPECT_FALSE(r.succeeded());
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.describe_end().rfind("killed by signal 15", 0), 0u) << r.describe_end();

  r = run_child(shell("kill -KILL $$"));
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_FALSE(r.succeeded());
}

TEST_F(ChildProcessTest, CapturesStdoutAndStderrInterleaved) {
  const ChildResult r = run_child(shell("echo out1; echo err1 >&2; echo out2; printf 'no newline' >&2"));
  EXPECT_TRUE(r.succeeded());
  EXPECT_EQ(r.output, "out1\nerr1\nout2\nno newline");
  EXPECT_FALSE(r.output_truncated);
}

TEST_F(ChildProcessTest, OutputLargerThanAPipeBuffer) {
  const ChildResult r = run_child(shell("head -c 1000000 /dev/zero | tr '\\0' a"));
  EXPECT_TRUE(r.succeeded()) << r.describe_end();
  EXPECT_EQ(r.output, std::string(1000000, 'a'));
}

TEST_F(ChildProcessTest, StdinIsEmpty) {
  // A child reading stdin sees end of file instead of waiting on ours.
  const ChildResult r = run_child(shell("cat; echo done", 20));
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.output, "done\n");
}

TEST_F(ChildProcessTest, TimeoutKillsTheChild) {
  ChildSpec spec;
  spec.argv = {"sleep", "30"};
  spec.timeout_seconds = 0.5;
  const ChildResult r = run_child(spec);
  EXPECT_TRUE(r.started);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.interrupted);
  EXPECT_FALSE(r.succeeded());
  EXPECT_EQ(r.term_signal, SIGTERM);
  EXPECT_EQ(r.describe_end(), "timed out");
}

TEST_F(ChildProcessTest, TimeoutKillsGrandchildren) {
  const fs::path pid_file = dir_ / "grandchild.pid", done = dir_ / "grandchild.done";
  const ChildResult r = run_child(
      shell("(sleep 30; touch '" + done.string() + "') & echo $! > '" + pid_file.string() + "'; sleep 30", 0.5));
  EXPECT_TRUE(r.timed_out);
  const pid_t grandchild = read_pid(pid_file);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(stops(grandchild)) << "grandchild " << grandchild << " still runs";
  EXPECT_FALSE(fs::exists(done)) << "the grandchild finished instead of being killed";
}

TEST_F(ChildProcessTest, LeftoverWorkersAreKilledWhenTheChildExits) {
  const fs::path pid_file = dir_ / "worker.pid", done = dir_ / "worker.done";
  const ChildResult r =
      run_child(shell("(sleep 30; touch '" + done.string() + "') & echo $! > '" + pid_file.string() + "'; exit 0"));
  EXPECT_TRUE(r.succeeded()) << r.describe_end();
  EXPECT_FALSE(r.timed_out);
  const pid_t worker = read_pid(pid_file);
  ASSERT_GT(worker, 0);
  EXPECT_TRUE(stops(worker)) << "worker " << worker << " still runs";
  EXPECT_FALSE(fs::exists(done)) << "the worker finished instead of being killed";
}

TEST_F(ChildProcessTest, SigkillFollowsWhenSigtermIsIgnored) {
  ChildSpec spec = shell("trap '' TERM; sleep 30", 0.3);
  spec.kill_grace_seconds = 0.5;
  const ChildResult r = run_child(spec);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGKILL);
}

// Before SIGKILL a second SIGTERM: a tool that quits at once on it (and
// removes its scratch files) gets the chance.
TEST_F(ChildProcessTest, ASecondSigtermComesBeforeSigkill) {
  ChildSpec spec = shell("n=0; trap 'n=$((n+1)); [ $n -ge 2 ] && exit 3' TERM; while :; do sleep 0.05; done", 0.3);
  spec.kill_grace_seconds = 0.5;
  const ChildResult r = run_child(spec);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 3) << r.describe_end();
}

// A wrapper shell (the group's leader) dies on the first SIGTERM; the tool it
// started still gets the second SIGTERM, not an immediate SIGKILL.
TEST_F(ChildProcessTest, TheGroupGetsTheWholeScheduleAfterItsLeaderExits) {
  const fs::path marker = dir_ / "second_term";
  ChildSpec spec = shell("(n=0; trap 'n=$((n+1)); [ $n -ge 2 ] && { touch \"" + marker.string() +
                             "\"; exit 0; }' TERM; while :; do sleep 0.05; done) & wait",
                         0.3);
  spec.kill_grace_seconds = 0.5;
  const ChildResult r = run_child(spec);
  EXPECT_TRUE(r.timed_out);
  EXPECT_TRUE(fs::exists(marker)) << "the tool was killed before its second SIGTERM";
}

TEST_F(ChildProcessTest, MissingCommandDoesNotStart) {
  for (const std::string cmd : {"/nonexistent/redline-no-such-command", "redline-no-such-command-xyz"}) {
    ChildSpec spec;
    spec.argv = {cmd, "arg"};
    const ChildResult r = run_child(spec);
    EXPECT_FALSE(r.started) << cmd;
    EXPECT_CONTAINS(r.start_error, "No such file");
    EXPECT_FALSE(r.succeeded());
    EXPECT_EQ(r.describe_end().rfind("could not start: ", 0), 0u) << r.describe_end();
  }
}

TEST_F(ChildProcessTest, NonExecutableFileDoesNotStart) {
  const fs::path script = dir_ / "not_executable.sh";
  make_file(script, "#!/bin/sh\necho hi\n", fs::perms::owner_read | fs::perms::owner_write);
  ChildSpec spec;
  spec.argv = {script.string()};
  const ChildResult r = run_child(spec);
  EXPECT_FALSE(r.started);
  EXPECT_CONTAINS(r.start_error, "Permission denied");
}

TEST_F(ChildProcessTest, EmptyCommand) {
  const ChildResult r = run_child(ChildSpec{});
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.start_error, "empty command");
}

TEST_F(ChildProcessTest, ExtraEnvReachesTheChildOnly) {
  ChildSpec spec = shell("printf '%s|%s' \"$REDLINE_CHILD_TEST_A\" \"$REDLINE_CHILD_TEST_B\"");
  spec.extra_env = {{"REDLINE_CHILD_TEST_A", "hello world"}, {"REDLINE_CHILD_TEST_B", "x=y"}};
  ASSERT_EQ(std::getenv("REDLINE_CHILD_TEST_A"), nullptr);
  const ChildResult r = run_child(spec);
  EXPECT_EQ(r.output, "hello world|x=y");
  EXPECT_EQ(std::getenv("REDLINE_CHILD_TEST_A"), nullptr);
  EXPECT_EQ(std::getenv("REDLINE_CHILD_TEST_B"), nullptr);
}

TEST_F(ChildProcessTest, ExtraEnvOverridesForTheChildAndRestoresOurValue) {
  setenv("REDLINE_CHILD_TEST_PRESET", "before", 1);
  ChildSpec spec = shell("printf '%s' \"$REDLINE_CHILD_TEST_PRESET\"");
  spec.extra_env = {{"REDLINE_CHILD_TEST_PRESET", "during"}};
  const ChildResult r = run_child(spec);
  EXPECT_EQ(r.output, "during");
  const char* after = std::getenv("REDLINE_CHILD_TEST_PRESET");
  ASSERT_NE(after, nullptr) << "run_child removed a variable it only meant to override for the child";
  EXPECT_STREQ(after, "before");
}

TEST_F(ChildProcessTest, OutputLimitKeepsTheTail) {
  // 200 lines "0000\n".."0199\n": 1000 bytes; keep the last 100 = 20 lines.
  ChildSpec spec = shell("i=0; while [ $i -lt 200 ]; do printf '%04d\\n' $i; i=$((i+1)); done");
  spec.output_limit = 100;
  std::string streamed;
  spec.on_output = [&](std::string_view chunk) { streamed.append(chunk); };
  const ChildResult r = run_child(spec);
  EXPECT_TRUE(r.succeeded()) << r.describe_end();
  std::string tail;
  for (int i = 180; i < 200; ++i) {
    char line[8];
    std::snprintf(line, sizeof line, "%04d\n", i);
    tail += line;
  }
  EXPECT_EQ(r.output, tail);
  EXPECT_TRUE(r.output_truncated);
  // The live echo saw everything, in order.
  ASSERT_EQ(streamed.size(), 1000u);
  EXPECT_EQ(streamed.substr(0, 10), "0000\n0001\n");
  EXPECT_EQ(streamed.substr(900), tail);
}

TEST_F(ChildProcessTest, InterruptStopsTheChild) {
  set_interrupted_for_testing(true);
  ChildSpec spec;
  spec.argv = {"sleep", "30"};
  const ChildResult r = run_child(spec);
  EXPECT_TRUE(r.started);
  EXPECT_TRUE(r.interrupted);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.succeeded());
  EXPECT_EQ(r.describe_end(), "interrupted");
  EXPECT_EQ(r.term_signal, SIGTERM);
}

TEST_F(ChildProcessTest, IgnoredSigchldDoesNotHideTheExit) {
  // Inherited SIG_IGN for SIGCHLD makes the kernel reap children itself.
  signal(SIGCHLD, SIG_IGN);
  ChildSpec spec = shell("exit 4", 30);
  const ChildResult r = run_child(spec);
  signal(SIGCHLD, SIG_DFL);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 4);
}

// A child that takes its monotonic clock at its start and right before
// _exit, leaves a member of its group behind that holds the output open (so
// neither output nor the pipe's end announces the exit), and a watcher that
// left the group and takes the clock once the group is killed, which
// run_child does the moment it sees the exit. argv: start, end and kill files.
constexpr const char* kExitClocks = R"(import os, sys, time
open(sys.argv[1], "w").write(repr(time.monotonic()))
ready_r, ready_w = os.pipe()
kill_r, kill_w = os.pipe()
if os.fork() == 0:
    os.setsid()
    os.close(kill_w); os.close(ready_r)
    os.write(ready_w, b"x"); os.close(ready_w)
    os.read(kill_r, 1)
    open(sys.argv[3], "w").write(repr(time.monotonic()))
    time.sleep(0.5)
    os._exit(0)
if os.fork() == 0:
    os.close(kill_r); os.close(ready_r); os.close(ready_w)
    time.sleep(30)
    os._exit(0)
os.close(kill_r); os.close(kill_w); os.close(ready_w)
os.read(ready_r, 1)
open(sys.argv[2], "w").write(repr(time.monotonic()))
os._exit(0)
)";

// A CLOCK_MONOTONIC reading (as steady_clock) a process wrote to `path`;
// waits up to 10 s for it, as the watcher writes after run_child may return.
std::optional<double> clock_in(const fs::path& path) {
  for (int i = 0; i < 200; ++i) {
    std::ifstream in(path);
    double value = 0;
    if (in >> value) return value;
    usleep(50000);
  }
  return std::nullopt;
}

// The wall time ends when the child exits: after the child's last act and
// before the kill its exit triggers, never when the output ends (the
// watcher holds it 0.5 s longer). Both bounds follow from the order of
// events, so a slow or loaded machine only widens them. (How soon the exit
// is seen, by its pidfd rather than the next look, is a latency: not a unit
// test's to assert.)
TEST_F(ChildProcessTest, WallTimeEndsAtTheExit) {
  const fs::path script = dir_ / "exit_clocks.py", started = dir_ / "started", ended = dir_ / "ended",
                 killed = dir_ / "killed";
  std::ofstream(script) << kExitClocks;
  const double before = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  const ChildResult r = run_child(
      shell("exec python3 '" + script.string() + "' '" + started.string() + "' '" + ended.string() + "' '" +
            killed.string() + "'"));
  ASSERT_TRUE(r.succeeded()) << r.describe_end() << r.output;
  const auto child_start = clock_in(started), child_end = clock_in(ended), group_killed = clock_in(killed);
  ASSERT_TRUE(child_start && child_end && group_killed) << "a clock file is missing";
  // run_child's clock starts after `before` and before the child's start.
  EXPECT_GE(r.wall_seconds, *child_end - *child_start) << "the wall time ends before the child's last act";
  EXPECT_LE(r.wall_seconds, *group_killed - before) << "the wall time ends after the kill its exit triggers";
}

TEST_F(ChildProcessTest, PeakRssOfTheChild) {
  ChildSpec spec = shell("exec python3 -c 'x = bytearray(b\"x\") * (160 << 20)'");
  spec.sample_seconds = 0;  // the kernel's high-water mark alone
  const ChildResult r = run_child(spec);
  ASSERT_TRUE(r.succeeded()) << r.describe_end() << r.output;
  ASSERT_TRUE(r.peak_rss_bytes.has_value());
  EXPECT_GE(*r.peak_rss_bytes, 160u << 20);
  EXPECT_LT(*r.peak_rss_bytes, 320u << 20);
}

TEST_F(ChildProcessTest, PeakRssCountsDescendantsTheChildWaitedFor) {
  ChildSpec spec = shell("python3 -c 'x = bytearray(b\"x\") * (160 << 20)'; echo done");
  spec.sample_seconds = 0;
  const ChildResult r = run_child(spec);
  ASSERT_TRUE(r.succeeded()) << r.describe_end() << r.output;
  ASSERT_TRUE(r.peak_rss_bytes.has_value());
  EXPECT_GE(*r.peak_rss_bytes, 160u << 20) << "the shell's own high-water mark is far smaller";
}

// Two workers at once: the high-water mark of either is half of what the
// tree held; the group's sampled sum sees both.
TEST_F(ChildProcessTest, PeakRssSumsTheGroupsProcessesRunningTogether) {
  const std::string worker = "python3 -c 'import time; x = bytearray(b\"x\") * (120 << 20); time.sleep(1.5)' & ";
  ChildSpec spec = shell(worker + worker + "wait");
  spec.sample_seconds = 0.05;
  const ChildResult r = run_child(spec);
  ASSERT_TRUE(r.succeeded()) << r.describe_end() << r.output;
  ASSERT_TRUE(r.peak_rss_bytes.has_value());
  EXPECT_GE(*r.peak_rss_bytes, 240u << 20);
}

TEST_F(ChildProcessTest, SamplesSeeTheGroupsProcesses) {
  ChildSpec spec = shell("echo $$; sleep 0.5");
  spec.sample_seconds = 0.05;
  std::vector<std::vector<int>> samples;
  spec.on_sample = [&](const std::vector<int>& pids) { samples.push_back(pids); };
  const ChildResult r = run_child(spec);
  ASSERT_TRUE(r.succeeded()) << r.describe_end();
  const int leader = std::stoi(r.output);
  ASSERT_FALSE(samples.empty());
  for (const auto& pids : samples) EXPECT_NE(std::find(pids.begin(), pids.end(), leader), pids.end());
  EXPECT_EQ(std::find(samples[0].begin(), samples[0].end(), static_cast<int>(getpid())), samples[0].end())
      << "our own process is not in the child's group";

  spec.sample_seconds = 0;
  samples.clear();
  run_child(spec);
  EXPECT_TRUE(samples.empty()) << "sample_seconds 0 never samples";
}

TEST_F(ChildProcessTest, NoOomKillsCountedForAnOrdinaryChild) {
  const ChildResult r = run_child(shell("exit 0"));
  if (r.oom_kills) EXPECT_EQ(*r.oom_kills, 0u);
  EXPECT_EQ(cgroup_oom_kill_count().has_value(), r.oom_kills.has_value());
}

TEST(OomKillCount, ReadsTheCounterLine) {
  EXPECT_EQ(parse_oom_kill_count("low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\noom_group_kill 0\n"), 2u);
  EXPECT_EQ(parse_oom_kill_count("oom_kill_disable 0\nunder_oom 0\noom_kill 17\n"), 17u);
  EXPECT_FALSE(parse_oom_kill_count("oom_kill_disable 0\nunder_oom 0\n").has_value());
  EXPECT_FALSE(parse_oom_kill_count("").has_value());
}

TEST_F(ChildProcessTest, FindExecutable) {
  const auto sh = find_executable("sh");
  ASSERT_TRUE(sh.has_value());
  EXPECT_EQ(fs::path(*sh).filename(), "sh");
  EXPECT_EQ(access(sh->c_str(), X_OK), 0);
  EXPECT_EQ(find_executable("/bin/sh"), "/bin/sh");
  EXPECT_FALSE(find_executable("redline-no-such-command-xyz").has_value());
  EXPECT_FALSE(find_executable("").has_value());
  EXPECT_FALSE(find_executable(dir_.string()).has_value());  // a directory
}

TEST_F(ChildProcessTest, FindExecutableSearchesPathInOrderAndSkipsNonExecutables) {
  const fs::path first = dir_ / "first", second = dir_ / "second";
  fs::create_directories(first);
  fs::create_directories(second);
  make_file(first / "redline-fake-tool", "#!/bin/sh\n", fs::perms::owner_read | fs::perms::owner_write);
  make_file(second / "redline-fake-tool", "#!/bin/sh\n", fs::perms::owner_all);
  make_file(first / "redline-other-tool", "#!/bin/sh\n", fs::perms::owner_all);
  make_file(second / "redline-other-tool", "#!/bin/sh\n", fs::perms::owner_all);
  setenv("PATH", (first.string() + ":" + second.string() + ":/usr/bin:/bin").c_str(), 1);
  EXPECT_EQ(find_executable("redline-fake-tool"), (second / "redline-fake-tool").string());
  EXPECT_EQ(find_executable("redline-other-tool"), (first / "redline-other-tool").string());
  EXPECT_FALSE(find_executable((first / "redline-fake-tool").string()).has_value());
  EXPECT_EQ(find_executable((second / "redline-fake-tool").string()), (second / "redline-fake-tool").string());
}

}  // namespace
}  // namespace redline
