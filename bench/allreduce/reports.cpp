#include "bench/allreduce/reports.hpp"

#include <cstdio>
#include <iostream>
#include <set>

#include "harness/core/interrupt.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/output.hpp"
#include "harness/tracking/sweep_charts.hpp"

namespace redline::allreduce {
namespace {

std::string files_named(const Flags& f) {
  std::string files;
  for (const std::string* path : {&f.output.csv_path, &f.output.json_path, &f.per_rank_csv})
    if (!path->empty()) files += (files.empty() ? "" : ", ") + *path;
  return files;
}

}  // namespace

void check_outputs_on_rank0(Bootstrap& bootstrap, const Flags& f) {
  char problem[1024] = {};
  if (bootstrap.rank() == 0) try {
      validate_output_paths(f.output);
      validate_output_path("--per-rank-csv", f.per_rank_csv);
      refuse_one_file_for_two("--csv", f.output.csv_path, "--per-rank-csv", f.per_rank_csv);
      refuse_one_file_for_two("--json", f.output.json_path, "--per-rank-csv", f.per_rank_csv);
    } catch (const UsageError& e) {
      std::snprintf(problem, sizeof problem, "%s", e.what());
    }
  bootstrap.broadcast(problem, sizeof problem, 0);
  if (problem[0] != '\0') throw UsageError(problem);
}

bool writes_files(const Flags& f) {
  return !f.output.csv_path.empty() || !f.output.json_path.empty() || !f.per_rank_csv.empty();
}

SweepRecord::Save save_to_files(const Flags& f) {
  return [&f](const Report& report, const Report& per_rank) {
    OutputOptions output = f.output;
    output.quiet = true;
    Report charted = report;
    add_sweep_charts(charted);  // for its JSON, as `redline report` draws them
    write_reports(charted, output);
    if (!f.per_rank_csv.empty()) write_reports(per_rank, OutputOptions{f.per_rank_csv, "", true});
  };
}

void save_after_failure(const Flags& f, SweepRecord& record, const std::string& what) {
  const auto announce = [&f](std::size_t rows) {
    std::cerr << kTool << ": rank 0: saving what was measured so far (" << rows << " results and an error row) to "
              << files_named(f) << "\n"
              << std::flush;
  };
  try {
    record.save_after_failure(what, announce);
  } catch (const std::exception& e) {
    std::cerr << kTool << ": rank 0: could not save: " << e.what() << "\n" << std::flush;
  }
}

int finish(const Flags& f, Bootstrap& bootstrap, SweepRecord& record, const CollectiveSweepResult& result) {
  if (bootstrap.rank() == 0) {
    // With several ranks the handlers were quiet (InterruptNotice::quiet).
    if (result.interrupted && bootstrap.size() > 1 && writes_files(f))
      std::cerr << "interrupted: saving what was measured so far\n" << std::flush;
    record.save();
    if (f.output.quiet) {
      std::set<std::string> failures;  // "nothing was measured" is both a result and an acceptance
      for (const auto& [what, text] : record.report().summary)
        if (text.rfind("FAILED", 0) == 0 && failures.insert(text).second) std::cerr << kTool << ": " << text << "\n";
      if (result.wrong > 0) std::cerr << kTool << ": " << result.wrong << " wrong values (the CSV's wrong column)\n";
    }
  }
  if (result.interrupted) return 128 + (interrupt_signal() ? interrupt_signal() : 2);
  return result.wrong > 0 || result.below_expectation || result.nothing_measured || result.named_culprit
             ? kExitCheckFailed
             : kExitOk;
}

}  // namespace redline::allreduce
