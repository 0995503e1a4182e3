// Compares two sets of results case by case and metric by metric, the way
// Google Benchmark's compare.py (repetitions: Mann-Whitney U) and
// nvbench_compare (single values: a noise band from each side's CV) do, with
// the metric's direction from results/SCHEMA.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/report/run_results.hpp"
#include "harness/report/schema.hpp"

namespace redline {

enum class Verdict { same, faster, slower, noisy };
std::string to_string(Verdict verdict);  // SAME FASTER SLOWER NOISY

struct CompareOptions {
  double threshold = 0.05;  // relative change below which a metric is SAME
  double alpha = 0.05;      // significance level of the U test
  bool all_metrics = false; // also judge metrics SCHEMA.md marks untracked
  // The baseline is a reference folder (results/references/<gpu>/): cases
  // match by tool and case key whatever file holds them, and a reference case
  // this run did not run is listed, not a regression (a reference holds
  // several suites' cases).
  bool baseline_is_reference = false;
};

struct MetricComparison {
  std::string tool, case_key, metric, unit;
  Better better = Better::higher;
  double baseline = 0, current = 0;  // medians over repetitions
  double change = 0;                 // (current - baseline) / |baseline|; +-inf from a zero baseline
  int baseline_n = 0, current_n = 0;
  std::optional<double> p_value;     // with repetitions on both sides
  std::optional<double> noise;       // relative noise band used (single values)
  Verdict verdict = Verdict::same;
};

struct Comparison {
  std::vector<MetricComparison> metrics;
  std::vector<std::string> only_in_baseline, only_in_current;  // "tool case_key"
  std::vector<std::string> not_run_now;  // a reference's cases absent from this run (not a regression)
  std::vector<std::string> not_compared;  // metrics without a direction in the schema
  std::vector<std::string> missing_metrics;  // "tool case_key metric": tracked, in the baseline, empty now
  int failing_now = 0;  // cases that ran ok in the baseline and have rows now, none ok (in only_in_baseline)
  // Geometric mean over compared metrics of (current/baseline), oriented so
  // that above 1 is better; 1 when nothing was compared.
  double geomean_improvement = 1;
  bool any_slower() const;
  // A regression for a nightly job: a metric SLOWER, a case that ran ok in the
  // baseline and is absent or failing now, or a tracked metric that vanished.
  bool regressed() const;
};

Comparison compare_results(const RunResults& baseline, const RunResults& current, const Schema& schema,
                           const CompareOptions& options = {});

// The change as the reports print it: "+12.3%", or "from 0" when the
// baseline is zero (no percentage exists).
std::string change_text(const MetricComparison& m);

enum class CompareFormat { table, markdown, json };
std::string format_comparison(const Comparison& comparison, CompareFormat format, const std::string& baseline_name,
                              const std::string& current_name);

// Two-sided Mann-Whitney U test p-value (normal approximation with tie and
// continuity correction; exact enumeration when both samples are small).
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace redline
