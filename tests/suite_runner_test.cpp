// The suite runner: the suite file's shell-style words and its errors, and
// real suite runs of real child processes (batch_sweep on fake_train, tools
// that skip, crash, fail or do not exist) into a run folder and the history.
#include "harness/tracking/suite_runner.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "harness/report/csv_reader.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/child_process.hpp"
#include "harness/core/interrupt.hpp"
#include "tests/support.hpp"

namespace fs = std::filesystem;
using namespace redline;

namespace {

fs::path write_suite(const fs::path& dir, const std::string& text) {
  const fs::path file = dir / "suite";
  std::ofstream(file, std::ios::binary) << text;
  return file;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The message parse_suite throws for `text`, or "" when it parses.
std::string suite_error(const std::string& text) {
  const redline::testing::TempDir temp("suite_runner_test_error");
  const fs::path& dir = temp.path();
  const fs::path file = write_suite(dir, text);
  try {
    parse_suite(file);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

using Words = std::vector<std::string>;

}  // namespace

TEST(ParseSuite, SplitsWordsLikeAShellWithoutExpanding) {
  const redline::testing::TempDir temp("suite_runner_test_words");
  const fs::path& dir = temp.path();
  const fs::path file = write_suite(dir,
                                    "# a comment line\n"
                                    "\n"
                                    "   \t\n"
                                    "first  prog 'a b' \"c \\\"d\\\" \\$e \\x\" f\\ g h#i  # trailing comment\n"
                                    "second\tprog '' \"\" a'b'\"c\" 'it''s' \"$\" '$HOME' x$ {bs}\r\n"
                                    "third_3.x-y ./tool -- --flag=\"a;b\"");
  const auto entries = parse_suite(file);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, "first");
  EXPECT_EQ(entries[0].line, 4u);
  EXPECT_EQ(entries[0].argv, (Words{"prog", "a b", "c \"d\" $e \\x", "f g", "h#i"}));
  EXPECT_EQ(entries[1].name, "second");
  EXPECT_EQ(entries[1].line, 5u);
  EXPECT_EQ(entries[1].argv, (Words{"prog", "", "", "abc", "its", "$", "$HOME", "x$", "{bs}"}));
  EXPECT_EQ(entries[2].name, "third_3.x-y");
  EXPECT_EQ(entries[2].argv, (Words{"./tool", "--", "--flag=a;b"}));
}

TEST(ParseSuite, ErrorsNameTheFileAndLine) {
  auto expect_error = [](const std::string& text, const std::string& where, const std::string& what) {
    SCOPED_TRACE(text);
    const std::string message = suite_error(text);
    EXPECT_CONTAINS(message, "suite:" + where + ": ");
    EXPECT_CONTAINS(message, what);
  };
  expect_error("ok prog\n# fine\nbad prog 'unclosed\n", "3", "unclosed single quote");
  expect_error("bad prog \"unclosed \\\"\n", "1", "unclosed double quote");
  expect_error("ok prog\n\nlonely   # no program\n", "3", "'lonely' has no program");
  expect_error("a prog\nb prog\na other\n", "3", "duplicate name 'a' (first on line 1)");
  expect_error("x/y prog\n", "1", "may only use letters");
  expect_error("'a b' prog\n", "1", "may only use letters");
  expect_error("suite prog\n", "1", "taken by the run folder");
  expect_error("env prog\n", "1", "env.json");
  expect_error("x prog | tee log\n", "1", "unquoted '|'");
  expect_error("x prog > out\n", "1", "unquoted '>'");
  expect_error("x prog $HOME\n", "1", "expand no variables");
  expect_error("x prog \"${HOME}\"\n", "1", "expand no variables");
  expect_error("x prog trailing\\\n", "1", "backslash ends the line");
  EXPECT_EQ(suite_error(""), "");
  EXPECT_THROW(parse_suite("/nonexistent/suite"), std::runtime_error);
}

TEST(ParseSuite, TheShippedSuitesParse) {
  for (const char* name : {"default", "quick"}) {
    const auto entries = parse_suite(fs::path(SOURCE_DIR) / "results" / "suites" / name);
    ASSERT_FALSE(entries.empty()) << name;
    EXPECT_EQ(entries[0].name, "batch_sweep_example");
    EXPECT_EQ(entries[0].argv[0], "build/bench/batch_sweep");
    const auto regex = std::find(entries[0].argv.begin(), entries[0].argv.end(), "--metric-regex");
    ASSERT_NE(regex, entries[0].argv.end());
    EXPECT_EQ(*(regex + 1), "throughput: ([0-9.]+) samples/s");
  }
}

TEST(RunSuite, RecordsEveryEntryGoesOnAfterFailuresAndAppendsTheHistory) {
  const redline::testing::TempDir temp("suite_runner_test_run");
  const fs::path& dir = temp.path();
  const fs::path runs = dir / "runs", history = dir / "history.csv";
  const fs::path suite = write_suite(
      dir, std::string("# a small suite of real programs\n") +
               "sweep '" BATCH_SWEEP_BIN "' --max 8 --metric-regex 'throughput: ([0-9.]+) samples/s' -- '" FAKE_TRAIN_BIN
               "' --batch-size {bs} --step-ms 1\n"
               "no_gpu sh -c 'echo no gpu >&2; exit 77'\n"
               "crash sh -c 'echo about to crash; kill -SEGV $$'\n"
               "check sh -c 'echo 3 values were wrong; exit 1'\n"
               "missing /nonexistent/redline_tool --flag\n"
               "args_dashes sh -c 'printf \"%s\\n\" \"$@\"' sh a -- b\n"
               "args_plain sh -c 'printf \"%s\\n\" \"$@\"' sh a b\n");
  const auto entries = parse_suite(suite);
  ASSERT_EQ(entries.size(), 7u);
  const Environment env = capture_environment();

  const SuiteRun run = run_suite(entries, runs, history, env);
  EXPECT_FALSE(run.interrupted);
  EXPECT_TRUE(run.any_failed());
  EXPECT_EQ(run.run_dir, runs / run.run_id);
  ASSERT_EQ(run.entries.size(), 7u);
  const std::vector<std::string> statuses = {"ok", "skipped", "error", "failed", "error", "ok", "ok"};
  const std::vector<int> codes = {0, 77, 128 + 11, 1, 127, 0, 0};
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(run.entries[i].name, entries[i].name);
    EXPECT_EQ(run.entries[i].status, statuses[i]) << entries[i].name << ": " << run.entries[i].note;
    EXPECT_EQ(run.entries[i].exit_code, codes[i]) << entries[i].name;
    EXPECT_TRUE(run.entries[i].seconds >= 0) << "a duration was recorded";
  }
  EXPECT_EQ(run.entries[0].note, "");
  EXPECT_EQ(run.entries[1].note, "no gpu");
  EXPECT_CONTAINS(run.entries[2].note, "signal 11");
  EXPECT_CONTAINS(run.entries[2].note, "about to crash");
  EXPECT_EQ(run.entries[3].note, "3 values were wrong");
  EXPECT_CONTAINS(run.entries[4].note, "could not start");

  // The run folder: the tools' reports and logs, env.json and the index.
  const fs::path& d = run.run_dir;
  for (const char* f : {"sweep.csv", "sweep.json", "sweep.log", "env.json", "suite.csv", "no_gpu.log",
                        "crash.log", "check.log", "missing.log"})
    EXPECT_TRUE(fs::exists(d / f)) << f;
  EXPECT_CONTAINS(slurp(d / "sweep.log"), "saturation_batch:");
  EXPECT_CONTAINS(slurp(d / "no_gpu.log"), "no gpu");
  EXPECT_CONTAINS(slurp(d / "missing.log"), "could not start");
  EXPECT_CONTAINS(slurp(d / "env.json"), env.host);
  // --csv/--json go before "--", else at the end.
  const std::string csv = fs::absolute(d / "args_dashes.csv").string(), json = fs::absolute(d / "args_dashes.json").string();
  EXPECT_EQ(slurp(d / "args_dashes.log"), "a\n--csv\n" + csv + "\n--json\n" + json + "\n--\nb\n");
  const std::string csv2 = fs::absolute(d / "args_plain.csv").string(), json2 = fs::absolute(d / "args_plain.json").string();
  EXPECT_EQ(slurp(d / "args_plain.log"), "a\nb\n--csv\n" + csv2 + "\n--json\n" + json2 + "\n");

  const CsvTable index = read_csv(d / "suite.csv");
  EXPECT_EQ(index.header, (Words{"name", "status", "exit_code", "seconds", "note"}));
  ASSERT_EQ(index.rows.size(), 7u);
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(index.value(i, "name"), entries[i].name);
    EXPECT_EQ(index.value(i, "status"), statuses[i]);
    EXPECT_EQ(index.value(i, "exit_code"), std::to_string(codes[i]));
  }
  EXPECT_EQ(index.value(1, "note"), "no gpu");

  // The history holds the ok sweep's metrics, under the suite's run id.
  const CsvTable h = read_csv(history);
  EXPECT_EQ(h.header, (Words{"run_id", "timestamp_utc", "host", "gpu", "tool", "case_key", "repetition", "metric",
                             "value", "status"}));
  ASSERT_FALSE(h.rows.empty());
  bool throughput = false;
  for (std::size_t r = 0; r < h.rows.size(); ++r) {
    EXPECT_EQ(h.value(r, "run_id"), run.run_id);
    EXPECT_EQ(h.value(r, "timestamp_utc"), env.timestamp_utc);
    // The suite entry "sweep" runs batch_sweep: its series are kept apart from other entries of the tool.
    EXPECT_EQ(h.value(r, "tool"), "batch_sweep[sweep]");
    EXPECT_EQ(h.value(r, "status"), "ok");
    EXPECT_FALSE(h.value(r, "value").empty());
    if (h.value(r, "metric") == "samples_per_s" && h.value(r, "case_key").rfind("batch_size=8;", 0) == 0)
      throughput = true;
  }
  EXPECT_TRUE(throughput);
  const std::size_t first_rows = h.rows.size();

  // A second run gets its own folder (even within the same second) and appends.
  const SuiteRun again = run_suite({entries[0], entries[1]}, runs, history, env);
  EXPECT_NE(again.run_id, run.run_id);
  EXPECT_TRUE(fs::exists(again.run_dir / "sweep.csv"));
  EXPECT_FALSE(again.any_failed());
  const CsvTable h2 = read_csv(history);
  EXPECT_EQ(h2.rows.size(), 2 * first_rows);
  EXPECT_EQ(h2.value(h2.rows.size() - 1, "run_id"), again.run_id);
  const std::string text = slurp(history);
  EXPECT_EQ(text.find("run_id,timestamp_utc"), 0u);
  EXPECT_EQ(text.find("run_id,timestamp_utc", 1), std::string::npos);
}

// A tool's command-line error is one line, so the index's note (the last
// line) is the problem itself, not "Run 'tool --help' for the flags.".
TEST(RunSuite, AToolsFlagErrorIsTheNote) {
  const redline::testing::TempDir temp("suite_runner_test_flag_error");
  const fs::path suite = write_suite(temp.path(), "typo '" BATCH_SWEEP_BIN "' --no-such-flag 1 -- true\n");
  const SuiteRun run = run_suite(parse_suite(suite), temp.path() / "runs", "", capture_environment());
  ASSERT_EQ(run.entries.size(), 1u);
  EXPECT_EQ(run.entries[0].status, "error");
  EXPECT_CONTAINS(run.entries[0].note, "--no-such-flag");
  EXPECT_CONTAINS(run.entries[0].note, "--help");
}

TEST(RunSuite, ARunWithoutResultsLeavesTheHistoryAloneAndNoHistoryMeansNone) {
  const redline::testing::TempDir temp("suite_runner_test_nohistory");
  const fs::path& dir = temp.path();
  const std::vector<SuiteEntry> entries = {{"skip", {"sh", "-c", "exit 77"}, 1}};
  const SuiteRun run = run_suite(entries, dir / "runs", dir / "history.csv", capture_environment());
  ASSERT_EQ(run.entries.size(), 1u);
  EXPECT_EQ(run.entries[0].status, "skipped");
  EXPECT_FALSE(run.any_failed());
  EXPECT_FALSE(fs::exists(dir / "history.csv"));
  EXPECT_TRUE(fs::exists(run.run_dir / "suite.csv"));

  const std::vector<SuiteEntry> sweep = {
      {"sweep", {BATCH_SWEEP_BIN, "--max", "2", "--", FAKE_TRAIN_BIN, "--batch-size", "{bs}", "--step-ms", "1"}, 1}};
  const SuiteRun ok = run_suite(sweep, dir / "runs", "", capture_environment());
  EXPECT_EQ(ok.entries.at(0).status, "ok") << ok.entries.at(0).note;
  EXPECT_FALSE(fs::exists(dir / "history.csv"));
}

TEST(RunSuite, CtrlCStopsTheSuiteAfterTheCurrentEntry) {
  install_interrupt_handlers();
  const redline::testing::TempDir temp("suite_runner_test_interrupt");
  const fs::path& dir = temp.path();
  // The first entry sends us what Ctrl-C would; the runner stops it and runs no more.
  const std::vector<SuiteEntry> entries = {{"first", {"sh", "-c", "echo started; kill -INT $PPID; sleep 30"}, 1},
                                           {"second", {"sh", "-c", "echo never > second.ran"}, 2}};
  const SuiteRun run = run_suite(entries, dir / "runs", dir / "history.csv", capture_environment());
  set_interrupted_for_testing(false);
  EXPECT_TRUE(run.interrupted);
  ASSERT_EQ(run.entries.size(), 2u);
  EXPECT_EQ(run.entries[0].status, "error");
  EXPECT_CONTAINS(run.entries[0].note, "interrupted");
  EXPECT_EQ(run.entries[1].status, "skipped");
  EXPECT_CONTAINS(run.entries[1].note, "interrupted");
  EXPECT_FALSE(fs::exists("second.ran"));
  EXPECT_FALSE(fs::exists(dir / "history.csv"));
  const CsvTable index = read_csv(run.run_dir / "suite.csv");
  ASSERT_EQ(index.rows.size(), 2u);
  EXPECT_EQ(index.value(1, "status"), "skipped");
  // Not a run to promote to a baseline: the first entry it names is the one cut short.
  EXPECT_CONTAINS(unfinished_suite_entry(run.run_dir), "suite entry 'first' is error");
}

// While an entry runs, suite.csv lists the entries still to come as pending:
// the index a killed suite leaves says what never ran. The first entry copies
// the index as it stands into a folder of its own (the --csv path is its $2).
TEST(RunSuite, TheIndexListsTheEntriesNotRunYetAsPending) {
  const redline::testing::TempDir temp("suite_runner_test_pending");
  const fs::path& dir = temp.path();
  fs::create_directories(dir / "killed");
  const std::string copy = "cp \"$(dirname \"$2\")/suite.csv\" \"$0\"";
  const std::vector<SuiteEntry> entries = {{"first", {"sh", "-c", copy, (dir / "killed" / "suite.csv").string()}, 1},
                                           {"second", {"true"}, 2}};
  const SuiteRun run = run_suite(entries, dir / "runs", "", capture_environment());
  ASSERT_EQ(run.entries.at(0).status, "ok") << run.entries.at(0).note;
  const CsvTable during = read_csv(dir / "killed" / "suite.csv");
  ASSERT_EQ(during.rows.size(), 2u);
  EXPECT_EQ(during.value(0, "status"), kPendingStatus);  // the copying entry had not ended
  EXPECT_EQ(during.value(1, "status"), kPendingStatus);
  EXPECT_EQ(during.value(1, "exit_code"), "-1");
  EXPECT_CONTAINS(unfinished_suite_entry(dir / "killed"), "suite entry 'first' is pending");
  // The whole run, ended: both ok, nothing pending, fit to be a baseline.
  const CsvTable after = read_csv(run.run_dir / "suite.csv");
  ASSERT_EQ(after.rows.size(), 2u);
  EXPECT_EQ(after.value(1, "status"), "ok");
  EXPECT_EQ(unfinished_suite_entry(run.run_dir), "");
  // A skipped entry (exit 77: no GPU here) is a whole run still; no suite.csv is no suite's run.
  const SuiteRun skipped = run_suite({{"no_gpu", {"sh", "-c", "exit 77"}, 1}}, dir / "runs", "", capture_environment());
  EXPECT_EQ(unfinished_suite_entry(skipped.run_dir), "");
  EXPECT_EQ(unfinished_suite_entry(dir), "");
}

// Bad input to `redline suite` and `redline report` is exit 2 naming the flag,
// found before anything runs: a directory or comment-only file as the suite
// (which ran an empty suite and passed), --runs naming a file, and a directory
// for --run-dir-file (found only after the whole suite ran) or for report's -o.
TEST(RedlineCli, BadSuiteAndReportInputIsUsageUpFront) {
  const redline::testing::TempDir temp("redline_cli_bad_input");
  const fs::path dir = temp.path();
  fs::create_directories(dir / "folder");
  std::ofstream(dir / "a_file") << "x";
  std::ofstream(dir / "comments") << "# nothing here\n\n   # still nothing\n";
  const fs::path suite = write_suite(dir, "echo /bin/true\n");
  const fs::path runs = dir / "runs";
  const std::string baseline = std::string(SOURCE_DIR) + "/results/baselines/none";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"suite", (dir / "folder").string()}, "FILE '" + (dir / "folder").string() + "'"},
      {{"suite", (dir / "comments").string()}, "FILE '" + (dir / "comments").string() + "': has no entries"},
      {{"suite", suite.string(), "--runs", (dir / "a_file").string()}, "--runs '" + (dir / "a_file").string() + "'"},
      {{"suite", suite.string(), "--runs", runs.string(), "--run-dir-file", (dir / "folder").string()},
       "--run-dir-file '" + (dir / "folder").string() + "'"},
      {{"report", baseline, "-o", (dir / "folder").string()}, "-o '" + (dir / "folder").string() + "'"},
      // A baseline of another tool's results compares nothing: not a report that passed.
      {{"report", baseline, "--baseline", (dir / "other.csv").string(), "-o", (dir / "r.html").string()},
       "--baseline '" + (dir / "other.csv").string() + "': shares no tracked metric"},
  };
  std::ofstream(dir / "other.csv") << "run_id,timestamp_utc,host,gpu,tool,case_key,repetition,bytes,busbw_GBps,status,note\r\n"
                                      "r,2026-01-01T00:00:00Z,h,none,allreduce_bench,bytes=1,0,1,5,ok,\r\n";
  for (const auto& c : cases) {
    ChildSpec spec;
    spec.argv = {REDLINE_BIN};
    spec.argv.insert(spec.argv.end(), c.args.begin(), c.args.end());
    if (c.args[0] == "suite") spec.argv.insert(spec.argv.end(), {"--history", ""});
    spec.timeout_seconds = 60;
    const ChildResult r = run_child(spec);
    EXPECT_EQ(r.exit_code, 2) << c.args[1] << ": " << r.output;
    EXPECT_CONTAINS(r.output, c.message);
    EXPECT_NOT_CONTAINS(r.output, "error:");
  }
  EXPECT_FALSE(fs::exists(runs));  // refused before the suite ran
  EXPECT_TRUE(fs::is_empty(dir / "folder"));
}

// report, compare and history measure nothing: a Ctrl-C stops them (130)
// rather than "saving what was measured" and finishing with 0. The report
// waits on a history that is a FIFO, so the signal lands mid-run.
TEST(RedlineCli, CtrlCStopsReport) {
  const redline::testing::TempDir temp("redline_cli_ctrl_c");
  const fs::path fifo = temp.path() / "history.csv", out = temp.path() / "r.html";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string run = std::string(SOURCE_DIR) + "/results/baselines/none";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(REDLINE_BIN, REDLINE_BIN, "report", run.c_str(), "--history", fifo.c_str(), "-o", out.c_str(), nullptr);
    _exit(127);
  }
  // Opening the write end succeeds once redline has opened the read end.
  int writer = -1;
  while ((writer = open(fifo.c_str(), O_WRONLY | O_NONBLOCK)) < 0 && errno == ENXIO) usleep(1000);
  ASSERT_GE(writer, 0) << strerror(errno);
  kill(pid, SIGINT);
  close(writer);  // the signal is pending first: a redline that ignores it reads EOF and goes on
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_FALSE(fs::exists(out));
}
