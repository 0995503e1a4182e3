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

// How a metric's change was judged beyond the threshold (none: a single value
// a side with no noise known).
enum class SignificanceTest { none, mann_whitney_u, welch_t, noise_band };
std::string to_string(SignificanceTest test);  // none mann_whitney_u welch_t noise_band

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
  SignificanceTest test = SignificanceTest::none;
  std::optional<double> p_value;     // with repetitions on both sides (U or Welch)
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
  // "tool case_key (1 of 3 current rows wrong)": a failed status among the
  // current rows that none of the case's baseline rows has, beside ok rows.
  std::vector<std::string> failing_in_part;
  // Geometric mean over compared metrics of (current/baseline), oriented so
  // that above 1 is better; 1 when nothing was compared.
  double geomean_improvement = 1;
  bool any_slower() const;
  // Whether the two sides shared anything to judge: a metric, a tracked
  // metric that vanished, or a case that ran ok and fails now (wholly or in
  // part). Without any, they are different tools' results, not a pass.
  bool shared_anything() const;
  // A regression for a nightly job: a metric SLOWER, a case that ran ok in the
  // baseline and is absent or failing now (wholly or in part), or a tracked
  // metric that vanished.
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

// Two-sided Mann-Whitney U test p-value: exact (the permutation distribution
// of the rank sum, ties included) for up to 10 values a side, else the normal
// approximation with tie and continuity correction.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);

// Two-sided p of Welch's t-test (unequal variances, Welch-Satterthwaite
// degrees of freedom); 1 with fewer than 2 values a side. With no spread on
// either side it is 0 when the means differ, 1 when they do not.
double welch_t_p(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace redline
