#include "harness/tracking/suite_runner.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>

#include "harness/core/atomic_file.hpp"
#include "harness/core/child_process.hpp"
#include "harness/report/csv_reader.hpp"
#include "harness/report/csv_writer.hpp"
#include "harness/report/gbench_json.hpp"
#include "harness/tracking/history.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/progress.hpp"
#include "harness/report/run_results.hpp"
#include "harness/measure/trial.hpp"

namespace redline {
namespace {

namespace fs = std::filesystem;

// A tool gets this long before it is killed: a whole night's sweep fits, a hang does not.
constexpr double kEntryTimeoutSeconds = 6 * 3600;

[[noreturn]] void suite_error(const fs::path& file, std::size_t line, const std::string& problem) {
  throw std::runtime_error(file.string() + ":" + std::to_string(line) + ": " + problem);
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

bool starts_variable(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '{' || c == '(';
}

// POSIX shell word splitting without expansions: 'single quotes' are literal,
// "double quotes" honour \" \\ \$ \`, a backslash outside quotes takes the
// next character literally, and # at the start of a word begins a comment.
// What a shell would expand or treat as an operator is an error rather than
// a silently literal argument: the line is a command, not a shell script.
std::vector<std::string> split_words(const std::string& line, const fs::path& file, std::size_t line_no) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (is_blank(c)) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '#' && !in_word) {
      break;
    } else if (c == '\'') {
      const auto close = line.find('\'', i + 1);
      if (close == std::string::npos) suite_error(file, line_no, "unclosed single quote");
      word.append(line, i + 1, close - i - 1);
      in_word = true;
      i = close;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size() && std::string_view("\"\\$`").find(line[j + 1]) != std::string_view::npos) {
          word += line[++j];
        } else if (line[j] == '$' && j + 1 < line.size() && starts_variable(line[j + 1])) {
          suite_error(file, line_no, "'$" + std::string(1, line[j + 1]) +
                                         "': suite files expand no variables or commands; write the value, or "
                                         "single-quote it for a literal $");
        } else if (line[j] == '`') {
          suite_error(file, line_no, "'`': suite files run no command substitution");
        } else {
          word += line[j];
        }
      }
      if (j >= line.size()) suite_error(file, line_no, "unclosed double quote");
      in_word = true;
      i = j;
    } else if (c == '\\') {
      if (i + 1 >= line.size())
        suite_error(file, line_no, "a backslash ends the line (a line cannot continue on the next)");
      word += line[++i];
      in_word = true;
    } else if (c == '$' && i + 1 < line.size() && starts_variable(line[i + 1])) {
      suite_error(file, line_no, "'$" + std::string(1, line[i + 1]) +
                                     "': suite files expand no variables or commands; write the value, or "
                                     "single-quote it for a literal $");
    } else if (std::string_view("|&;<>()`").find(c) != std::string_view::npos) {
      suite_error(file, line_no, std::string("unquoted '") + c +
                                     "': a suite line is a program and its arguments, not a shell command "
                                     "(quote it; a pipeline belongs in a script that passes --csv/--json on)");
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

// The name becomes file names in the run folder, beside its own index files.
std::optional<std::string> name_problem(const std::string& name) {
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
      return "name '" + name + "' may only use letters, digits, '_', '.' and '-'";
  if (name.front() == '.') return "name '" + name + "' must not start with '.'";
  if (name == "suite" || name == "env" || name == "history")
    return "name '" + name + "' is taken by the run folder's own " + (name == "env" ? "env.json" : name + ".csv");
  return std::nullopt;
}

std::string seconds_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", seconds);
  return buf;
}

// Output flags go before "--" so they reach the tool, not the command it runs.
std::vector<std::string> tool_argv(const SuiteEntry& entry, const fs::path& csv, const fs::path& json) {
  std::vector<std::string> argv = entry.argv;
  if (argv.empty()) return argv;  // run_child reports the empty command
  const auto dashes = std::find(argv.begin() + 1, argv.end(), "--");
  argv.insert(dashes, {"--csv", csv.string(), "--json", json.string()});
  return argv;
}

// exit_code in suite.csv: the exit status, 128+N for signal N (as a shell
// says), 127 when the program could not start, -1 when it never ran.
SuiteEntryResult judge_entry(const std::string& name, const ChildResult& child, double seconds) {
  SuiteEntryResult r;
  r.name = name;
  r.seconds = seconds;
  const std::string last_line = last_output_line(child.output);
  auto with_output = [&](std::string what) { return last_line.empty() ? what : what + ": " + last_line; };
  if (!child.started) {
    r.status = "error";
    r.exit_code = 127;
    r.note = child.describe_end();
  } else if (child.timed_out || child.interrupted || child.term_signal != 0 || child.exit_code < 0) {
    r.status = "error";
    r.exit_code = child.term_signal ? 128 + child.term_signal : child.exit_code;
    r.note = with_output(child.timed_out ? "timed out (the " + std::to_string(int(kEntryTimeoutSeconds / 3600)) + " h limit)"
                                         : child.describe_end());
  } else {
    r.exit_code = child.exit_code;
    r.status = child.exit_code == 0 ? "ok" : child.exit_code == 77 ? "skipped" : child.exit_code == 1 ? "failed" : "error";
    if (r.status != "ok") r.note = last_line.empty() ? child.describe_end() : last_line;
  }
  return r;
}

// Every entry of the suite: those run so far with their results, the rest
// `pending`, so the index of a suite killed part-way says what never ran.
void write_suite_index(const fs::path& run_dir, const std::vector<SuiteEntry>& suite,
                       const std::vector<SuiteEntryResult>& done) {
  std::string out = "name,status,exit_code,seconds,note\r\n";
  auto line = [&](const SuiteEntryResult& e) {
    out += csv_field(e.name) + "," + csv_field(e.status) + "," + std::to_string(e.exit_code) + "," +
           seconds_text(e.seconds) + "," + csv_field(e.note) + "\r\n";
  };
  for (const auto& e : done) line(e);
  for (std::size_t i = done.size(); i < suite.size(); ++i)
    line({suite[i].name, kPendingStatus, -1, 0, "not ended yet (where the suite has ended, it was stopped here)"});
  write_file_atomically(run_dir / "suite.csv", out);
}

// run_ids have a one-second resolution: a second run in the same second gets
// a suffix rather than another run's folder.
std::pair<std::string, fs::path> claim_run_dir(const fs::path& runs_root, const std::string& base_id) {
  fs::create_directories(runs_root);
  for (int attempt = 1;; ++attempt) {
    const std::string id = attempt == 1 ? base_id : base_id + "-" + std::to_string(attempt);
    if (fs::create_directory(runs_root / id)) return {id, runs_root / id};
  }
}

// Every entry's CSV joins the history under the suite's run id and start
// time, so a trend names the run folder that holds the evidence.
void append_run_to_history(const SuiteRun& run, const std::vector<SuiteEntry>& entries,
                           const std::string& started_utc, const fs::path& history_csv) {
  RunResults results;
  results.source = run.run_dir.string();
  for (const auto& entry : entries) {
    const fs::path csv = run.run_dir / (entry.name + ".csv");
    if (!fs::exists(csv)) continue;
    try {
      RunResults one = load_results(csv);
      for (auto& row : one.rows) results.rows.push_back(std::move(row));
    } catch (const std::exception& e) {
      std::cerr << "redline suite: " << csv.string() << " is left out of the history: " << e.what() << "\n";
    }
  }
  if (results.rows.empty()) {
    std::cerr << "redline suite: no results in " << run.run_dir.string() << "; " << history_csv.string()
              << " is unchanged\n";
    return;
  }
  for (auto& row : results.rows) {
    row.run_id = run.run_id;
    row.timestamp_utc = started_utc;
  }
  try {
    append_history(history_csv, results);
  } catch (const std::exception& e) {
    // The run folder is complete; a history that cannot take it must not hide the run.
    std::cerr << "redline suite: history not updated: " << e.what() << "\n";
  }
}

}  // namespace

std::string unfinished_suite_entry(const fs::path& run_dir) {
  const fs::path index = run_dir / "suite.csv";
  if (!fs::exists(index)) return "";
  const CsvTable table = read_csv(index);
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    const std::string& status = table.value(r, "status");
    const bool never_ran = table.value(r, "exit_code") == "-1";  // interrupted before it, or pending
    if (status == "ok" || (status == "skipped" && !never_ran)) continue;
    const std::string& note = table.value(r, "note");
    return "suite entry '" + table.value(r, "name") + "' is " + (never_ran && status == "skipped" ? "not run" : status) +
           (note.empty() ? "" : " (" + note + ")");
  }
  return "";
}

bool SuiteRun::any_failed() const {
  return std::any_of(entries.begin(), entries.end(),
                     [](const SuiteEntryResult& e) { return e.status == "failed" || e.status == "error"; });
}

std::vector<SuiteEntry> parse_suite(const std::filesystem::path& suite_file) {
  std::ifstream in(suite_file, std::ios::binary);
  if (!in) throw std::runtime_error(suite_file.string() + ": cannot read the suite file");
  std::vector<SuiteEntry> entries;
  std::map<std::string, std::size_t> first_line;
  std::size_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto words = split_words(line, suite_file, line_no);
    if (words.empty()) continue;
    SuiteEntry entry;
    entry.name = words.front();
    entry.line = line_no;
    if (entry.name.empty()) suite_error(suite_file, line_no, "the name is empty");
    if (auto problem = name_problem(entry.name)) suite_error(suite_file, line_no, *problem);
    if (words.size() < 2) suite_error(suite_file, line_no, "'" + entry.name + "' has no program to run");
    if (words[1].empty()) suite_error(suite_file, line_no, "'" + entry.name + "' has an empty program name");
    if (auto [it, fresh] = first_line.emplace(entry.name, line_no); !fresh)
      suite_error(suite_file, line_no,
                  "duplicate name '" + entry.name + "' (first on line " + std::to_string(it->second) + ")");
    entry.argv.assign(words.begin() + 1, words.end());
    entries.push_back(std::move(entry));
  }
  return entries;
}

SuiteRun run_suite(const std::vector<SuiteEntry>& entries, const std::filesystem::path& runs_root,
                   const std::filesystem::path& history_csv, const Environment& env) {
  SuiteRun run;
  std::tie(run.run_id, run.run_dir) = claim_run_dir(runs_root, make_run_id(env.host));
  const std::string started_utc = env.timestamp_utc.empty() ? utc_timestamp() : env.timestamp_utc;
  write_file_atomically(run.run_dir / "env.json", environment_json(env));
  write_suite_index(run.run_dir, entries, run.entries);

  const Progress progress;
  const std::string total = std::to_string(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const SuiteEntry& entry = entries[i];
    const std::string counter = "[" + std::to_string(i + 1) + "/" + total + "] " + entry.name;
    if (interrupted()) {
      run.interrupted = true;
      run.entries.push_back({entry.name, "skipped", -1, 0, "not run: the suite was interrupted"});
      continue;
    }
    progress.line(counter + " ...");
    const fs::path base = fs::absolute(run.run_dir / entry.name);
    const fs::path log_path = base.string() + ".log";
    std::ofstream log(log_path, std::ios::binary | std::ios::trunc);
    if (!log) throw std::runtime_error("cannot write " + log_path.string());

    ChildSpec spec;
    spec.argv = tool_argv(entry, base.string() + ".csv", base.string() + ".json");
    spec.extra_env = {{"REDLINE_RUN_ID", run.run_id}};
    spec.timeout_seconds = kEntryTimeoutSeconds;
    // Streamed, so a long tool's log can be followed and survives anything.
    spec.on_output = [&log](std::string_view chunk) {
      log.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      log.flush();
    };
    const auto start = std::chrono::steady_clock::now();
    const ChildResult child = run_child(spec);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!child.started) log << "redline suite: " << child.describe_end() << "\n";
    log.close();

    SuiteEntryResult result = judge_entry(entry.name, child, seconds);
    if (child.interrupted) run.interrupted = true;
    progress.line(counter + ": " + result.status + (result.note.empty() ? "" : " (" + result.note + ")") + ", " +
                  seconds_text(result.seconds) + " s");
    run.entries.push_back(std::move(result));
    write_suite_index(run.run_dir, entries, run.entries);  // kept current: a killed suite still leaves its index
  }
  write_suite_index(run.run_dir, entries, run.entries);
  if (interrupted()) run.interrupted = true;

  // The history tracks whole nights: a run cut short stays in its folder only.
  if (!history_csv.empty() && run.interrupted)
    std::cerr << "redline suite: interrupted, so " << history_csv.string() << " is unchanged\n";
  else if (!history_csv.empty())
    append_run_to_history(run, entries, started_utc, history_csv);
  return run;
}

}  // namespace redline
