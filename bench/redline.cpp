// redline: the regression-tracking front end.
//   redline suite [FILE] [--quick]            run a suite into results/runs/<run_id>/
//   redline compare BASELINE CURRENT          judge every tracked metric (exit 1 on a regression)
//   redline history [--case S] [--metric S]   trends across runs, with level-shift detection
//   redline report RUN [--baseline RUN] -o F  a self-contained HTML report
//   redline baseline RUN [--force]            promote a whole, passing run to results/baselines/<gpu>/
//   redline plan [--from RUN] FLAGS...        how long a training run takes (bench/plan/)
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdio>  // renameat2
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

#include "bench/plan/plan_flags.hpp"
#include "bench/profile/profile_flags.hpp"
#include "harness/core/atomic_file.hpp"
#include "harness/tracking/compare.hpp"
#include "harness/report/console_table.hpp"
#include "harness/report/csv_reader.hpp"
#include "harness/report/output.hpp"
#include "harness/core/environment.hpp"
#include "harness/tracking/headlines.hpp"
#include "harness/tracking/history.hpp"
#include "harness/tracking/html_report.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/report/recorded_summary.hpp"
#include "harness/report/run_results.hpp"
#include "harness/report/schema.hpp"
#include "harness/tracking/references.hpp"
#include "harness/tracking/suite_runner.hpp"
#include "harness/report/tool_main.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

using namespace redline;
namespace fs = std::filesystem;

namespace {

// Reads a run or CSV for a command, turning unreadable input, or rows that
// are not one run's, into exit 2.
RunResults load_input(const char* what, const std::string& path) {
  if (!fs::exists(path)) throw UsageError(what, path, "no such run folder or CSV file");
  RunResults results;
  try {
    results = load_results(path);
  } catch (const CsvError& e) {
    throw UsageError(what, path, e.what());
  } catch (const std::runtime_error& e) {
    throw UsageError(what, path, e.what());
  }
  if (const std::string problem = pooled_rows_problem(results); !problem.empty()) throw UsageError(what, path, problem);
  return results;
}

// The schema compiled in, unless --schema names another file.
Schema load_schema(const std::string& path) {
  if (path.empty()) return Schema::compiled_in();
  if (!fs::is_regular_file(path)) throw UsageError("--schema", path, "no such file");
  try {
    return Schema::load(path);
  } catch (const std::runtime_error& e) {
    throw UsageError("--schema", path, e.what());
  }
}

// A folder of results/references/ (it says what it is in reference.txt).
bool is_reference_folder(const std::string& path) { return fs::is_regular_file(fs::path(path) / "reference.txt"); }

// "the reference results for NVIDIA H200 (results/references/H200: transcribed ...)".
std::string reference_description(const std::string& folder) {
  try {
    const Reference r = load_reference(folder);
    return "the reference results for " + r.gpu + " (" + folder + ": " + r.source + (r.dates.empty() ? "" : "; " + r.dates) +
           "); cases it holds that this run did not run are listed, not counted as regressions";
  } catch (const std::runtime_error& e) {
    throw UsageError("BASELINE", folder, e.what());
  }
}

double percent_flag(const char* flag, const std::string& text) {
  const double value = parse_number(flag, text);
  require_in_range(flag, text, value, 0, 1000);
  return value / 100.0;
}

// Two sides with nothing to judge are other tools' results: bad input (the
// flag's side named), not a comparison that passed. A case that ran ok and
// fails now is something in common: a regression.
void require_something_in_common(const Comparison& comparison, const char* flag, const std::string& side,
                                 const std::string& other) {
  if (!comparison.shared_anything())
    throw UsageError(flag, side,
                     "shares no tracked metric of any case with " + other + ": nothing to compare (different tools?)");
}

int cmd_suite(const std::string& file, bool quick, const std::string& runs_dir, const std::string& history,
              const std::string& run_dir_file) {
  const fs::path suite = !file.empty() ? fs::path(file) : fs::path(quick ? "results/suites/quick" : "results/suites/default");
  if (!fs::exists(suite)) throw UsageError("FILE", suite.string(), "no such suite file");
  // A pipe (<(grep ...)) or /dev/stdin reads as a file; a folder reads as nothing.
  if (fs::is_directory(suite)) throw UsageError("FILE", suite.string(), "is a folder; give a suite file");
  std::vector<SuiteEntry> entries;
  try {
    entries = parse_suite(suite);
  } catch (const std::runtime_error& e) {
    throw UsageError("FILE", suite.string(), e.what());
  }
  // An empty suite would "pass" a nightly having measured nothing.
  if (entries.empty()) throw UsageError("FILE", suite.string(), "has no entries (only comments or blank lines)");
  // Checked before the suite runs for hours, not after.
  std::error_code ec;
  if (fs::exists(runs_dir, ec) && !fs::is_directory(runs_dir, ec))
    throw UsageError("--runs", runs_dir, "is a file, not a folder");
  validate_output_path("--run-dir-file", run_dir_file);
  const SuiteRun run = run_suite(entries, runs_dir, history, capture_environment());
  // For scripts (nightly): which folder this run wrote, without guessing by name.
  if (!run_dir_file.empty()) write_file_atomically(run_dir_file, run.run_dir.string() + "\n");
  std::cout << "\nredline suite run " << run.run_id << "\nresults: " << run.run_dir.string() << "/\n";
  std::vector<std::vector<std::string>> cells = {{"tool", "status", "seconds", "note"}};
  for (const auto& e : run.entries) cells.push_back({e.name, e.status, format_number(e.seconds, 1), e.note});
  std::cout << format_table(cells, {false, false, true, false});
  for (const auto& e : run.entries) {
    if (e.status != "ok") continue;
    const auto summary = recorded_summary(run.run_dir / (e.name + ".json"));
    if (summary.empty()) continue;
    std::cout << "\n" << e.name << ":\n";
    for (const auto& [key, value] : summary) std::cout << "  " << key << ": " << value << "\n";
  }
  if (run.interrupted) return 128 + (interrupt_signal() ? interrupt_signal() : 2);
  return run.any_failed() ? kExitCheckFailed : kExitOk;
}

int cmd_compare(const std::string& baseline, const std::string& current, const std::string& threshold,
                const std::string& alpha_text, const std::string& format_text, bool all_metrics,
                const std::string& schema_path) {
  CompareOptions options;
  options.threshold = percent_flag("--threshold", threshold);
  options.alpha = parse_number("--alpha", alpha_text);
  if (!(options.alpha > 0 && options.alpha < 1)) throw UsageError("--alpha", alpha_text, "must be between 0 and 1, exclusive");
  options.all_metrics = all_metrics;
  CompareFormat format;
  if (format_text == "table") format = CompareFormat::table;
  else if (format_text == "markdown") format = CompareFormat::markdown;
  else if (format_text == "json") format = CompareFormat::json;
  else throw UsageError("--format", format_text, "use table, markdown or json");
  const Schema schema = load_schema(schema_path);
  const RunResults base = load_input("BASELINE", baseline), cur = load_input("CURRENT", current);
  options.baseline_is_reference = is_reference_folder(baseline);
  if (options.baseline_is_reference && format != CompareFormat::json)
    std::cout << "baseline: " << reference_description(baseline) << "\n";
  const Comparison comparison = compare_results(base, cur, schema, options);
  require_something_in_common(comparison, "CURRENT", current, baseline);
  std::cout << format_comparison(comparison, format, baseline, current);
  return comparison.regressed() ? kExitCheckFailed : kExitOk;
}

int cmd_history(const std::string& file, const std::string& case_filter, const std::string& metric_filter,
                const std::string& threshold, const std::string& schema_path) {
  if (!fs::exists(file)) throw UsageError("--file", file, "no history yet (redline suite appends to it)");
  const Schema schema = load_schema(schema_path);
  const double limit = percent_flag("--threshold", threshold);
  std::vector<HistorySeries> series;
  try {
    series = load_history(file, case_filter, metric_filter);
  } catch (const std::runtime_error& e) {  // CsvError too
    throw UsageError("--file", file, e.what());
  }
  if (series.empty() && case_filter.empty() && metric_filter.empty())
    throw UsageError("--file", file, "holds no ok values yet (only a header, or only failed rows)");
  if (series.empty()) throw UsageError("--case/--metric", case_filter + "/" + metric_filter, "match no series in " + file);
  std::vector<std::vector<std::string>> cells = {{"tool", "case", "metric", "runs", "first", "last", "findings"}};
  for (const auto& s : series) {
    std::string findings;
    for (const auto& f : detect_trends(s, schema, limit))
      findings += (findings.empty() ? "" : "; ") + std::string(f.worse ? "WORSE " : "better ") + f.kind + " at " +
                  f.run_id + " (" + human_number(f.before) + " -> " + human_number(f.after) + ", " +
                  (f.change > 0 ? "+" : "") + format_number(100 * f.change, 1) + "%)";
    cells.push_back({s.tool, s.case_key, s.metric, std::to_string(s.points.size()),
                     human_number(s.points.front().value), human_number(s.points.back().value),
                     findings.empty() ? "-" : findings});
  }
  std::cout << format_table(cells, {false, false, false, true, true, true, false});
  return kExitOk;
}

// The headline figures over time of this run's cases, so the report stays
// about it; a chart whose lines hold one run each shows no trend and is left out.
std::vector<HeadlineChart> run_headlines(const std::string& history, const RunResults& run, const Schema& schema) {
  std::vector<HistorySeries> all, ours;
  try {
    all = load_history(history);
  } catch (const std::runtime_error& e) {
    std::cerr << "redline report: leaving out the history: " << e.what() << "\n";
  }
  std::set<std::pair<std::string, std::string>> cases;
  for (const auto& row : run.rows) cases.insert({series_tool(row), row.case_key});
  for (auto& s : all)
    if (cases.count({s.tool, s.case_key})) ours.push_back(std::move(s));
  std::vector<HeadlineChart> charts;
  for (auto& chart : headline_history(ours, schema))
    if (std::any_of(chart.lines.begin(), chart.lines.end(), [](const auto& l) { return l.points.size() > 1; }))
      charts.push_back(std::move(chart));
  return charts;
}

int cmd_report(const std::string& run, const std::string& baseline, const std::string& output,
               const std::string& history, const std::string& schema_path) {
  validate_output_path("-o", output);
  ReportInputs inputs;
  inputs.schema = load_schema(schema_path);
  inputs.run = load_input("RUN", run);
  inputs.title = "redline report: " + fs::path(run).filename().string();
  if (!baseline.empty()) {
    CompareOptions options;
    options.baseline_is_reference = is_reference_folder(baseline);
    inputs.comparison = compare_results(load_input("--baseline", baseline), inputs.run, inputs.schema, options);
    require_something_in_common(*inputs.comparison, "--baseline", baseline, run);
    inputs.baseline_name = baseline;
  }
  if (!history.empty() && fs::exists(history)) inputs.history = run_headlines(history, inputs.run, inputs.schema);
  write_file_atomically(output, render_html_report(inputs));
  std::cout << "report: " << output << "\n";
  return inputs.comparison && inputs.comparison->regressed() ? kExitCheckFailed : kExitOk;
}

// results/baselines/<gpu>/: "NVIDIA H200" -> NVIDIA_H200; machines without a GPU share "none".
// Only letters, digits, '.', '-' and '_', and no leading '.', so the name is
// one plain folder ("." or ".." would be the baselines folder or its parent)
// and never one of the staging names below, which hold a '+'.
std::string baseline_name(const RunResults& run) {
  std::string gpu = run.rows.empty() ? "none" : run.rows.front().gpu;
  for (char& c : gpu)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  for (char& c : gpu) {
    if (c != '.') break;
    c = '_';
  }
  return gpu.empty() ? "none" : gpu;
}

// The baselines folder: made if missing; an existing file there is bad --dir.
void require_baselines_folder(const std::string& root) {
  std::error_code ec;
  if (fs::exists(root, ec) && !fs::is_directory(root, ec)) throw UsageError("--dir", root, "is a file, not a folder");
  fs::create_directories(root);
}

// A folder of our own beside the baseline, made here (so never someone
// else's): its name holds the process id and a '+' no baseline name has.
fs::path make_staging_folder(const std::string& root, const fs::path& target, const std::string& role) {
  // mkdtemp's random suffix: a folder left by a killed run (same PID in a
  // container) never blocks the next one, and no user folder is taken over.
  std::string name = target.string() + "+" + role + "-XXXXXX";
  if (::mkdtemp(name.data()) == nullptr)
    throw UsageError("--dir", root, "cannot make a staging folder beside " + target.string() + ": " + std::strerror(errno));
  return name;
}

// The run's result files (regular .csv and .json files; a folder named x.csv
// is not one) into `staging`.
void copy_results(const std::string& run, const fs::path& staging) {
  for (const auto& entry : fs::directory_iterator(run)) {
    const auto ext = entry.path().extension();
    if ((ext == ".csv" || ext == ".json") && entry.is_regular_file())
      fs::copy_file(entry.path(), staging / entry.path().filename());
  }
}

// Puts `staging` in the baseline's place, keeping the old one until the new
// one is there: never half a baseline, and the old one back on a failure.
void swap_in(const std::string& root, const fs::path& staging, const fs::path& target) {
  if (!fs::exists(target)) {
    fs::rename(staging, target);
    return;
  }
  // In one step where the file system can (Linux's RENAME_EXCHANGE): a
  // nightly reading the baseline meanwhile finds the old one or the new one,
  // never none. `staging` then holds the old one.
  if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove_all(staging);
    return;
  }
  const fs::path old = make_staging_folder(root, target, "old");
  fs::remove(old);  // the name is ours now; rename wants it free
  fs::rename(target, old);
  try {
    fs::rename(staging, target);
  } catch (...) {
    fs::rename(old, target);
    throw;
  }
  fs::remove_all(old);
}

// A baseline is what later nights must match: a run that failed, or stopped
// part-way, would make its missing cases "new" and its broken ones the norm.
void require_whole_passing_run(const std::string& run) {
  std::string problem;
  try {
    problem = unfinished_suite_entry(run);
  } catch (const std::runtime_error& e) {  // CsvError too
    throw UsageError("RUN", run, e.what());
  }
  if (!problem.empty())
    throw UsageError("RUN", run, problem + ": a baseline must be a whole run that passed; --force promotes it anyway");
}

int cmd_baseline(const std::string& run, const std::string& root, bool name_only, bool reference_only, bool force) {
  const RunResults results = load_input("RUN", run);
  if (name_only) {
    std::cout << baseline_name(results) << "\n";
    return kExitOk;
  }
  if (reference_only) {
    const std::string gpu = results.rows.empty() ? "" : results.rows.front().gpu;
    if (const auto reference = find_reference(references_root(), gpu)) std::cout << reference->folder.string() << "\n";
    return kExitOk;
  }
  if (!fs::is_directory(run)) throw UsageError("RUN", run, "give a run folder (results/runs/<run_id>)");
  if (!force) require_whole_passing_run(run);
  require_baselines_folder(root);
  const fs::path target = fs::path(root) / baseline_name(results);
  if (fs::exists(target) && !fs::is_directory(target))
    throw UsageError("--dir", root, "'" + target.string() + "' is a file, not a baseline folder");
  // Build the new baseline beside the old one, then swap.
  const fs::path staging = make_staging_folder(root, target, "new");
  try {
    copy_results(run, staging);
    swap_in(root, staging, target);
  } catch (...) {
    fs::remove_all(staging);  // ours; gone already after a good swap
    throw;
  }
  std::cout << "baseline: " << target.string() << " (from " << run << ")\n";
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"redline: suites, comparisons, history, reports, and a training run's plan and profile", "redline"};
  app.require_subcommand(1);

  std::string suite_file, runs_dir = "results/runs", history = "results/history.csv", run_dir_file;
  bool quick = false;
  auto* suite = app.add_subcommand("suite", "Run a suite file (default results/suites/default; --quick: results/suites/quick)");
  suite->add_option("FILE", suite_file, "Suite file: one 'NAME PROGRAM ARGS...' per line");
  suite->add_flag("--quick", quick, "The small suite for CI and smoke tests");
  suite->add_option("--runs", runs_dir, "Where run folders go (default results/runs)");
  allow_empty_value(
      suite->add_option("--history", history, "History file to append to (default results/history.csv; '' for none)"));
  suite->add_option("--run-dir-file", run_dir_file, "Write the run folder's path to FILE (for scripts)");

  std::string baseline, current, threshold = "5", alpha = "0.05", format = "table", schema;
  bool all_metrics = false;
  auto* compare = app.add_subcommand("compare", "Compare two runs (folders or CSV files); exit 1 on a regression");
  compare->add_option("BASELINE", baseline)->required();
  compare->add_option("CURRENT", current)->required();
  compare->add_option("--threshold", threshold, "Changes below PCT % are SAME (default 5)");
  compare->add_option("--alpha", alpha, "Significance level of the Mann-Whitney U test (default 0.05)");
  compare->add_option("--format", format, "table, markdown or json");
  compare->add_flag("--all-metrics", all_metrics, "Also judge metrics SCHEMA.md marks untracked");
  compare->add_option("--schema", schema, "Read directions from this SCHEMA.md instead of the one built in");

  std::string case_filter, metric_filter;
  auto* hist = app.add_subcommand("history", "A metric's trend across runs, with level shifts flagged");
  hist->add_option("--case", case_filter, "Only cases whose key contains TEXT");
  hist->add_option("--metric", metric_filter, "Only metrics whose name contains TEXT");
  hist->add_option("--file", history, "History file (default results/history.csv)");
  hist->add_option("--threshold", threshold, "Smallest change worth flagging, PCT % (default 5)");
  hist->add_option("--schema", schema, "Read directions from this SCHEMA.md instead of the one built in");

  std::string run, report_baseline, output = "report.html";
  auto* report = app.add_subcommand("report", "A self-contained HTML report of a run");
  report->add_option("RUN", run)->required();
  report->add_option("--baseline", report_baseline, "Run to compare with");
  report->add_option("-o,--output", output, "HTML file to write (default report.html)");
  allow_empty_value(report->add_option("--history", history,
                                       "History file whose trends to plot (default results/history.csv; '' for none)"));
  report->add_option("--schema", schema, "Read directions from this SCHEMA.md instead of the one built in");

  std::string baselines_root = "results/baselines";
  bool name_only = false, reference_only = false, force = false;
  auto* promote = app.add_subcommand("baseline", "Promote a run folder to results/baselines/<gpu>/");
  promote->add_option("RUN", run)->required();
  promote->add_option("--dir", baselines_root, "Baselines folder (default results/baselines)");
  promote->add_flag("--name", name_only, "Only print the baseline folder name this run belongs to");
  promote->add_flag("--reference", reference_only,
                    "Only print the reference folder of this run's GPU model (results/references), or nothing");
  promote->add_flag("--force", force, "Promote a run whose suite failed or stopped part-way");

  plan::PlanFlags plan_flags;
  auto* plan = plan::add_plan_subcommand(app, plan_flags);
  profile::ProfileFlags profile_flags;
  auto* profile = profile::add_profile_subcommand(app, profile_flags);

  return run_tool(app, argc, argv, [&] {
    // These only read and write files (atomically): a Ctrl-C has nothing to
    // save, so it stops them (exit 130) instead of letting them finish.
    if (*compare || *hist || *report) install_exit_on_interrupt();
    if (*plan) return plan::run_plan(plan_flags);
    if (*profile) return profile::run_profile(profile_flags);
    if (*suite) return cmd_suite(suite_file, quick, runs_dir, history, run_dir_file);
    if (*compare) return cmd_compare(baseline, current, threshold, alpha, format, all_metrics, schema);
    if (*hist) return cmd_history(history, case_filter, metric_filter, threshold, schema);
    if (*report) return cmd_report(run, report_baseline, output, history, schema);
    return cmd_baseline(run, baselines_root, name_only, reference_only, force);
  });
}
