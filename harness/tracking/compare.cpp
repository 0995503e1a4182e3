#include "harness/tracking/compare.hpp"

// How a metric is judged (README "redline compare" quotes this):
//
//   Cases are matched by (tool, case_key), using only rows whose status is ok.
//   When both sides are run folders and one tool wrote more than one CSV in
//   either (two suite entries running the same tool), the file name is part
//   of the match too, and the tool shows as "tool[entry]".
//   A metric is judged when it is present on both sides, SCHEMA.md gives it a
//   direction, and SCHEMA.md marks it tracked (or --all-metrics). Metrics
//   SCHEMA.md lacks are listed as not compared.
//
//   baseline, current = the medians over each side's repetitions
//   change            = (current - baseline) / baseline
//
//   1. |change| <= threshold                    -> SAME
//   2. both sides have >= 2 repetitions: a two-sided test of the two samples,
//      the Mann-Whitney U test (as Google Benchmark's compare.py; exact for up
//      to 10 values a side, ties included) where it can reach alpha, i.e. its
//      smallest p, 2 / C(n1 + n2, n1), is below it (4 a side at alpha 0.05);
//      with fewer, Welch's t-test (which assumes roughly normal noise):
//        p < alpha                              -> FASTER or SLOWER (by the metric's direction)
//        otherwise                              -> NOISY
//   3. otherwise (a single value on a side), a noise band (as nvbench_compare):
//        noise = the larger relative noise of the two sides, where a side's
//        noise is its rows' time_cv metric (the CV of the measurement; the
//        median when it has several rows), else the CV of its repetitions
//        when it has several, else unknown.
//        noise known and |change| <= 2 x noise  -> NOISY
//        otherwise                              -> FASTER or SLOWER
//
//   Cases present on one side only are listed; so are cases whose rows are
//   all failed (oom, error, ...) on one side, with their status. A case
//   failing on both sides is not listed. A case whose current rows include a
//   failed status (not skipped) that none of its baseline rows has is listed
//   as failing in part, and is a regression even though its ok rows are
//   judged as usual: one wrong repetition beside two ok ones is a broken
//   result, not a SAME. The geometric mean runs over every
//   judged metric of current/baseline (baseline/current when lower is
//   better), so above 1 is an improvement; non-positive values are left out.
//
// With n <= 3 repetitions per side the U test's smallest two-sided p is 0.1:
// it could never be significant at alpha 0.05, so Welch's t-test judges.
// Use 4 or more a side to be judged by the U test, which assumes
// nothing about the shape of the noise.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "harness/report/console_table.hpp"
#include "harness/report/json_writer.hpp"
#include "harness/measure/stats.hpp"

namespace redline {
namespace {

// The exact distribution is enumerated up to this many values per side.
constexpr std::size_t kExactMaxN = 10;

// The exact two-sided p of a rank sum: under the null every choice of which n1
// of the pooled values are a's is equally likely, so the distribution of a's
// (doubled) rank sum is counted over all C(n, n1) choices. Counting over the
// ranks as they are, midranks included, makes it exact with ties too (the
// permutation distribution), where the normal approximation is poor for few
// values: 3 tied values a side read p 0.047 by it, 0.1 exactly.
double exact_rank_sum_p(const std::vector<std::size_t>& doubled_ranks, std::size_t n1, std::size_t observed) {
  std::size_t largest_sum = 0;
  for (std::size_t r : doubled_ranks) largest_sum += r;
  // ways[k][s]: the choices of k of the ranks seen so far whose sum is s.
  std::vector<std::vector<double>> ways(n1 + 1, std::vector<double>(largest_sum + 1, 0));
  ways[0][0] = 1;
  for (std::size_t r : doubled_ranks)
    for (std::size_t k = n1; k >= 1; --k)
      for (std::size_t s = largest_sum; s >= r; --s) ways[k][s] += ways[k - 1][s - r];
  double total = 0, at_most = 0, at_least = 0;
  for (std::size_t s = 0; s <= largest_sum; ++s) {
    total += ways[n1][s];
    if (s <= observed) at_most += ways[n1][s];
    if (s >= observed) at_least += ways[n1][s];
  }
  return std::min(1.0, 2 * std::min(at_most, at_least) / total);
}

// Suite run folders name each tool's CSV after its suite entry.
std::string entry_of(const RunResults& results, const ResultRow& row) {
  if (row.file.empty() || row.file == results.source) return "";
  return std::filesystem::path(row.file).stem().string();
}

using CaseId = std::tuple<std::string, std::string, std::string>;  // entry (or ""), tool, case_key

struct CaseRows {
  std::vector<const ResultRow*> baseline, current;
};

std::vector<const ResultRow*> ok_rows(const std::vector<const ResultRow*>& rows) {
  std::vector<const ResultRow*> ok;
  for (const ResultRow* row : rows)
    if (row->status == RowStatus::ok) ok.push_back(row);
  return ok;
}

std::string statuses(const std::vector<const ResultRow*>& rows) {
  std::vector<std::string> seen;
  for (const ResultRow* row : rows)
    if (std::find(seen.begin(), seen.end(), to_string(row->status)) == seen.end()) seen.push_back(to_string(row->status));
  std::string text;
  for (const auto& s : seen) text += (text.empty() ? "" : ", ") + s;
  return text;
}

std::vector<double> values_of(const std::vector<const ResultRow*>& rows, const std::string& metric) {
  std::vector<double> values;
  for (const ResultRow* row : rows)
    if (auto it = row->metrics.find(metric); it != row->metrics.end()) values.push_back(it->second);
  return values;
}

// The largest time_cv taken as a measurement. A CV of positive times cannot
// pass sqrt(n - 1), so above 10 a row would need over 100 samples with one
// extreme outlier; such a value (or 1e300) is a broken row, and as a noise
// band (2x CV) it would hide any regression.
constexpr double kLargestTimeCv = 10;

bool valid_time_cv(double cv) { return std::isfinite(cv) && cv >= 0 && cv <= kLargestTimeCv; }

// A side's relative noise: its rows' own CV of the measurement (time_cv),
// else the spread of its repetitions. An invalid time_cv (negative, NaN, inf,
// absurdly large) counts as absent rather than widening the band.
std::optional<double> side_noise(const std::vector<const ResultRow*>& rows, const std::string& metric) {
  std::vector<double> cvs;
  for (const ResultRow* row : rows) {
    if (!row->metrics.count(metric)) continue;
    if (auto it = row->metrics.find("time_cv"); it != row->metrics.end() && valid_time_cv(it->second))
      cvs.push_back(it->second);
  }
  if (!cvs.empty()) return summarize(cvs).median;
  const auto values = values_of(rows, metric);
  if (values.size() >= 2) return std::fabs(summarize(values).cv);
  return std::nullopt;
}

// The smallest two-sided p the U test can give with n1 and n2 distinct values:
// the most extreme ordering of all C(n1 + n2, n1), at either end. Ties only
// raise it.
double smallest_u_test_p(std::size_t n1, std::size_t n2) {
  double orderings = 1;  // C(n1 + n2, n1), built up factor by factor
  for (std::size_t i = 1; i <= n1; ++i) orderings = orderings * static_cast<double>(n2 + i) / static_cast<double>(i);
  return std::min(1.0, 2 / orderings);
}

Verdict judge(MetricComparison& m, const std::vector<double>& base, const std::vector<double>& cur,
              std::optional<double> base_noise, std::optional<double> cur_noise, const CompareOptions& options) {
  // Which way the value moved, not the sign of the change: a baseline below
  // zero (gain_pct of -10) would turn the sign of (current - baseline) / baseline.
  const bool worse = m.better == Better::higher ? m.current < m.baseline : m.current > m.baseline;
  const Verdict moved = worse ? Verdict::slower : Verdict::faster;
  if (base.size() >= 2 && cur.size() >= 2) {
    // With 2 or 3 repetitions a side the U test's smallest p is 0.33 or 0.1:
    // it would call a steady halving NOISY, where one value a side calls it
    // SLOWER. Welch's t-test can decide there; it assumes roughly normal noise.
    const bool rank_test = smallest_u_test_p(base.size(), cur.size()) < options.alpha;
    m.test = rank_test ? SignificanceTest::mann_whitney_u : SignificanceTest::welch_t;
    m.p_value = rank_test ? mann_whitney_p(base, cur) : welch_t_p(base, cur);
    if (std::fabs(m.change) <= options.threshold) return Verdict::same;
    return *m.p_value < options.alpha ? moved : Verdict::noisy;
  }
  if (base_noise || cur_noise) {
    m.test = SignificanceTest::noise_band;
    m.noise = std::max(base_noise.value_or(0), cur_noise.value_or(0));
  }
  if (std::fabs(m.change) <= options.threshold) return Verdict::same;
  if (m.noise && std::fabs(m.change) <= 2 * *m.noise) return Verdict::noisy;
  return moved;
}

// Beyond a million percent (10,000x) the digits say nothing more: print the
// bound with > or <, so a tiny baseline cannot make a 300-digit column.
constexpr double kLargestPrintedFraction = 1e4;

std::string percent_text(double fraction, const char* format) {
  if (std::isnan(fraction)) return "-";
  char buf[48];
  const double bounded = std::clamp(fraction, -kLargestPrintedFraction, kLargestPrintedFraction);
  std::snprintf(buf, sizeof buf, format, 100 * bounded);
  if (bounded == fraction) return buf;
  std::string text(fraction > 0 ? ">" : "<");
  return text += buf;
}

std::string evidence_text(const MetricComparison& m) {
  char buf[48];
  if (m.p_value) {
    // Welch's p is marked: it rests on roughly normal noise, the U test's does not.
    std::snprintf(buf, sizeof buf, m.test == SignificanceTest::welch_t ? "p=%.3g (t)" : "p=%.3g", *m.p_value);
    return buf;
  }
  if (m.noise) return "noise " + percent_text(*m.noise, "%.1f%%");
  return "-";
}

std::string counts_line(const Comparison& c) {
  std::map<Verdict, int> counts;
  for (const auto& m : c.metrics) ++counts[m.verdict];
  return std::to_string(c.metrics.size()) + " metrics compared: " + std::to_string(counts[Verdict::same]) +
         " SAME, " + std::to_string(counts[Verdict::faster]) + " FASTER, " +
         std::to_string(counts[Verdict::slower]) + " SLOWER, " + std::to_string(counts[Verdict::noisy]) + " NOISY";
}

std::string geomean_line(const Comparison& c) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4fx", c.geomean_improvement);
  return std::string("geomean improvement (current vs baseline, above 1 is better): ") + buf;
}

const char* kNotComparedWhy = "no direction in results/SCHEMA.md";

std::string format_text(const Comparison& c, const std::string& baseline_name, const std::string& current_name) {
  std::string out = "baseline: " + baseline_name + "\ncurrent:  " + current_name + "\n\n";
  if (c.metrics.empty()) {
    out += "No metrics compared.\n";
  } else {
    std::vector<std::vector<std::string>> cells{
        {"", "tool", "case", "metric", "baseline", "current", "change", "p / noise", "verdict"}};
    for (const auto& m : c.metrics)
      cells.push_back({m.verdict == Verdict::slower ? "!" : "", m.tool, m.case_key, m.metric, human_number(m.baseline),
                       human_number(m.current), change_text(m), evidence_text(m), to_string(m.verdict)});
    out += format_table(cells, {false, false, false, false, true, true, true, true, false});
  }
  auto list = [&](const char* title, const std::vector<std::string>& items) {
    if (items.empty()) return;
    out += std::string("\n") + title + ":\n";
    for (const auto& item : items) out += "  " + item + "\n";
  };
  list("only in baseline", c.only_in_baseline);
  list("failing now in part", c.failing_in_part);
  list("in the reference, not run now", c.not_run_now);
  list("tracked metric missing in current", c.missing_metrics);
  list("only in current", c.only_in_current);
  list((std::string("not compared (") + kNotComparedWhy + ")").c_str(), c.not_compared);
  out += "\n" + counts_line(c) + "\n" + geomean_line(c) + "\n";
  return out;
}

std::string md_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|' || ch == '\\' || ch == '*' || ch == '`' || ch == '<' || ch == '>' || ch == '[' || ch == ']')
      out += '\\';
    out += ch;
  }
  return out;
}

std::string md_code(const std::string& text) {
  if (text.empty() || text.find('`') != std::string::npos || text.find('|') != std::string::npos)
    return md_escape(text);
  return "`" + text + "`";
}

std::string format_markdown(const Comparison& c, const std::string& baseline_name,
                            const std::string& current_name) {
  std::string out = "### redline compare\n\nBaseline: " + md_code(baseline_name) + ", current: " +
                    md_code(current_name) + "\n\n";
  if (c.metrics.empty()) {
    out += "No metrics compared.\n";
  } else {
    out += "| tool | case | metric | baseline | current | change | p / noise | verdict |\n";
    out += "|---|---|---|---:|---:|---:|---:|---|\n";
    for (const auto& m : c.metrics) {
      const std::string verdict = m.verdict == Verdict::slower ? "**! SLOWER**" : to_string(m.verdict);
      out += "| " + md_escape(m.tool) + " | " + md_code(m.case_key) + " | " + md_code(m.metric) + " | " +
             human_number(m.baseline) + " | " + human_number(m.current) + " | " + change_text(m) + " | " +
             evidence_text(m) + " | " + verdict + " |\n";
    }
  }
  auto list = [&](const std::string& title, const std::vector<std::string>& items) {
    if (items.empty()) return;
    out += "\n**" + title + ":**\n\n";
    for (const auto& item : items) out += "- " + md_escape(item) + "\n";
  };
  list("Only in baseline", c.only_in_baseline);
  list("Failing now in part", c.failing_in_part);
  list("In the reference, not run now", c.not_run_now);
  list("Tracked metric missing in current", c.missing_metrics);
  list("Only in current", c.only_in_current);
  list(std::string("Not compared (") + kNotComparedWhy + ")", c.not_compared);
  out += "\n" + counts_line(c) + "; " + geomean_line(c) + "\n";
  return out;
}

std::string format_json(const Comparison& c, const std::string& baseline_name, const std::string& current_name) {
  JsonWriter json;
  json.begin_object();
  json.key("baseline").value(baseline_name);
  json.key("current").value(current_name);
  json.key("metrics").begin_array();
  for (const auto& m : c.metrics) {
    json.begin_object();
    json.key("tool").value(m.tool);
    json.key("case_key").value(m.case_key);
    json.key("metric").value(m.metric);
    json.key("unit").value(m.unit);
    json.key("better").value(m.better == Better::higher ? "higher" : "lower");
    json.key("baseline").value(m.baseline);
    json.key("current").value(m.current);
    json.key("change").value(m.change);
    json.key("baseline_n").value(m.baseline_n);
    json.key("current_n").value(m.current_n);
    json.key("test").value(to_string(m.test));
    json.key("p_value");
    if (m.p_value) json.value(*m.p_value); else json.null();
    json.key("noise");
    if (m.noise) json.value(*m.noise); else json.null();
    json.key("verdict").value(to_string(m.verdict));
    json.end_object();
  }
  json.end_array();
  auto list = [&](const char* name, const std::vector<std::string>& items) {
    json.key(name).begin_array();
    for (const auto& item : items) json.value(item);
    json.end_array();
  };
  list("only_in_baseline", c.only_in_baseline);
  list("failing_in_part", c.failing_in_part);
  list("not_run_now", c.not_run_now);
  list("only_in_current", c.only_in_current);
  list("not_compared", c.not_compared);
  list("missing_metrics", c.missing_metrics);
  json.key("geomean_improvement").value(c.geomean_improvement);
  json.key("any_slower").value(c.any_slower());
  json.key("regressed").value(c.regressed());
  json.end_object();
  return json.str();
}

// Every case of both sides by (entry, tool, case key), in the baseline's
// order, then the current run's new cases.
struct MatchedCases {
  std::map<CaseId, CaseRows> cases;
  std::vector<CaseId> order;
};

MatchedCases match_cases(const RunResults& baseline, const RunResults& current, bool baseline_is_reference) {
  // A tool whose rows come from several files of a run folder (two suite
  // entries running the same tool) is matched file by file, so their cases
  // never mix.
  std::map<std::string, std::set<std::string>> base_entries, cur_entries;
  for (const auto& row : baseline.rows) base_entries[row.tool].insert(entry_of(baseline, row));
  for (const auto& row : current.rows) cur_entries[row.tool].insert(entry_of(current, row));
  auto by_entry = [&](const std::string& tool) {
    if (baseline_is_reference) return false;
    const auto b = base_entries.find(tool), c = cur_entries.find(tool);
    if (b == base_entries.end() || c == cur_entries.end()) return false;
    if (b->second.count("") || c->second.count("")) return false;  // a CSV given directly
    return b->second.size() > 1 || c->second.size() > 1;
  };
  MatchedCases matched;
  auto add = [&](const RunResults& results, bool is_baseline) {
    for (const auto& row : results.rows) {
      CaseId id{by_entry(row.tool) ? entry_of(results, row) : "", row.tool, row.case_key};
      auto [it, inserted] = matched.cases.try_emplace(id);
      if (inserted) matched.order.push_back(id);
      (is_baseline ? it->second.baseline : it->second.current).push_back(&row);
    }
  };
  add(baseline, true);
  add(current, false);
  return matched;
}

// The current rows whose failed status none of the baseline's rows has. A
// skipped row was not run (an interrupted repetition), so it is no failure.
std::vector<const ResultRow*> newly_failed_rows(const CaseRows& rows) {
  std::set<RowStatus> before;
  for (const ResultRow* row : rows.baseline) before.insert(row->status);
  std::vector<const ResultRow*> failed;
  for (const ResultRow* row : rows.current)
    if (row->status != RowStatus::ok && row->status != RowStatus::skipped && !before.count(row->status))
      failed.push_back(row);
  return failed;
}

// Both sides' ok rows of a case; nullopt (and the case listed) when a side
// has none. A case failing on both sides is not listed: nothing changed.
std::optional<std::pair<std::vector<const ResultRow*>, std::vector<const ResultRow*>>> ok_sides(
    const std::string& label, const CaseRows& rows, Comparison& comparison, bool baseline_is_reference) {
  if (rows.current.empty()) {
    (baseline_is_reference ? comparison.not_run_now : comparison.only_in_baseline).push_back(label);
    return std::nullopt;
  }
  if (rows.baseline.empty()) {
    comparison.only_in_current.push_back(label);
    return std::nullopt;
  }
  auto base_ok = ok_rows(rows.baseline), cur_ok = ok_rows(rows.current);
  if (base_ok.empty() && cur_ok.empty()) return std::nullopt;
  if (cur_ok.empty()) {
    comparison.only_in_baseline.push_back(label + " (no ok row in current: " + statuses(rows.current) + ")");
    ++comparison.failing_now;
    return std::nullopt;
  }
  if (base_ok.empty()) {
    comparison.only_in_current.push_back(label + " (no ok row in baseline: " + statuses(rows.baseline) + ")");
    return std::nullopt;
  }
  if (auto failed = newly_failed_rows(rows); !failed.empty())
    comparison.failing_in_part.push_back(label + " (" + std::to_string(failed.size()) + " of " +
                                         std::to_string(rows.current.size()) + " current rows " + statuses(failed) + ")");
  return std::pair{std::move(base_ok), std::move(cur_ok)};
}

std::set<std::string> metric_names(const std::vector<const ResultRow*>& rows) {
  std::set<std::string> names;
  for (const ResultRow* row : rows)
    for (const auto& [name, value] : row->metrics) names.insert(name);
  return names;
}

void add_not_compared(const std::string& name, Comparison& comparison) {
  auto& list = comparison.not_compared;
  if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
}

// The case's metrics to judge, in the schema's order (so reports read the
// same every time): on both sides, with a direction, tracked (or
// --all-metrics). Metrics the schema lacks are listed as not compared; a
// tracked one the current side lost is listed as missing.
std::vector<std::string> metrics_to_judge(const std::string& label, const std::vector<const ResultRow*>& base_ok,
                                          const std::vector<const ResultRow*>& cur_ok, const Schema& schema,
                                          const CompareOptions& options, Comparison& comparison) {
  const std::set<std::string> base_names = metric_names(base_ok), cur_names = metric_names(cur_ok);
  std::vector<std::string> names;
  for (const auto& name : base_names) {
    const auto spec = schema.find(name);
    if (!spec) add_not_compared(name, comparison);
    else if (cur_names.count(name)) names.push_back(name);
    else if (spec->tracked || options.all_metrics) comparison.missing_metrics.push_back(label + " " + name);
  }
  for (const auto& name : cur_names)
    if (!schema.find(name)) add_not_compared(name, comparison);
  auto schema_rank = [&](const std::string& metric) {
    const std::string pattern = schema.find(metric)->name;
    const auto& all = schema.metrics();
    return std::find_if(all.begin(), all.end(), [&](const MetricSpec& s) { return s.name == pattern; }) - all.begin();
  };
  std::stable_sort(names.begin(), names.end(),
                   [&](const std::string& a, const std::string& b) { return schema_rank(a) < schema_rank(b); });
  std::erase_if(names, [&](const std::string& name) { return !schema.find(name)->tracked && !options.all_metrics; });
  return names;
}

MetricComparison compare_metric(const std::string& tool_label, const std::string& case_key, const MetricSpec& spec,
                                const std::string& name, const std::vector<const ResultRow*>& base_ok,
                                const std::vector<const ResultRow*>& cur_ok, const CompareOptions& options) {
  const auto base_values = values_of(base_ok, name), cur_values = values_of(cur_ok, name);
  MetricComparison m;
  m.tool = tool_label;
  m.case_key = case_key;
  m.metric = name;
  m.unit = spec.unit;
  m.better = spec.better;
  m.baseline = summarize(base_values).median;
  m.current = summarize(cur_values).median;
  m.baseline_n = static_cast<int>(base_values.size());
  m.current_n = static_cast<int>(cur_values.size());
  // Over |baseline|, so the change has the sign of the move (-10 -> 20 is +300%).
  if (m.baseline != 0) m.change = (m.current - m.baseline) / std::fabs(m.baseline);
  else if (m.current != 0) m.change = std::copysign(std::numeric_limits<double>::infinity(), m.current);
  m.verdict = judge(m, base_values, cur_values, side_noise(base_ok, name), side_noise(cur_ok, name), options);
  return m;
}

}  // namespace

// A change from a zero baseline has no percentage: say so rather than "+inf%".
std::string change_text(const MetricComparison& m) {
  if (m.baseline == 0 && m.current != 0) return "from 0";
  return percent_text(m.change, "%+.1f%%");
}

std::string to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::same: return "SAME";
    case Verdict::faster: return "FASTER";
    case Verdict::slower: return "SLOWER";
    case Verdict::noisy: return "NOISY";
  }
  return "?";
}

std::string to_string(SignificanceTest test) {
  switch (test) {
    case SignificanceTest::none: return "none";
    case SignificanceTest::mann_whitney_u: return "mann_whitney_u";
    case SignificanceTest::welch_t: return "welch_t";
    case SignificanceTest::noise_band: return "noise_band";
  }
  return "?";
}

bool Comparison::any_slower() const {
  return std::any_of(metrics.begin(), metrics.end(), [](const auto& m) { return m.verdict == Verdict::slower; });
}

bool Comparison::shared_anything() const {
  return !metrics.empty() || !missing_metrics.empty() || failing_now > 0 || !failing_in_part.empty();
}

bool Comparison::regressed() const {
  return any_slower() || !only_in_baseline.empty() || !missing_metrics.empty() || !failing_in_part.empty();
}

Comparison compare_results(const RunResults& baseline, const RunResults& current, const Schema& schema,
                           const CompareOptions& options) {
  const MatchedCases matched = match_cases(baseline, current, options.baseline_is_reference);
  Comparison comparison;
  double log_sum = 0;
  int log_count = 0;
  for (const CaseId& id : matched.order) {
    const auto& [entry, tool, case_key] = id;
    const std::string tool_label = entry.empty() ? tool : tool + "[" + entry + "]";
    const auto sides = ok_sides(tool_label + " " + case_key, matched.cases.at(id), comparison,
                                options.baseline_is_reference);
    if (!sides) continue;
    const auto& [base_ok, cur_ok] = *sides;
    for (const auto& name : metrics_to_judge(tool_label + " " + case_key, base_ok, cur_ok, schema, options, comparison)) {
      MetricComparison m = compare_metric(tool_label, case_key, *schema.find(name), name, base_ok, cur_ok, options);
      if (m.baseline > 0 && m.current > 0) {
        const double ratio = m.better == Better::higher ? m.current / m.baseline : m.baseline / m.current;
        log_sum += std::log(ratio);
        ++log_count;
      }
      comparison.metrics.push_back(std::move(m));
    }
  }
  std::sort(comparison.not_compared.begin(), comparison.not_compared.end(), natural_less);
  if (log_count) comparison.geomean_improvement = std::exp(log_sum / log_count);
  return comparison;
}

std::string format_comparison(const Comparison& comparison, CompareFormat format, const std::string& baseline_name,
                              const std::string& current_name) {
  switch (format) {
    case CompareFormat::table: return format_text(comparison, baseline_name, current_name);
    case CompareFormat::markdown: return format_markdown(comparison, baseline_name, current_name);
    case CompareFormat::json: return format_json(comparison, baseline_name, current_name);
  }
  return "";
}

namespace {

// The regularized incomplete beta function I_x(a, b), by its continued
// fraction (modified Lentz), on the side of x where the fraction converges fast.
double incomplete_beta_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEpsilon = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double dm = m;
    for (const double step : {dm * (b - dm) * x / ((a + 2 * dm - 1) * (a + 2 * dm)),
                              -(a + dm) * (a + b + dm) * x / ((a + 2 * dm) * (a + 2 * dm + 1))}) {
      d = 1 + step * d;
      d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
      c = 1 + step / c;
      if (std::fabs(c) < kTiny) c = kTiny;
      h *= c * d;
    }
    if (std::fabs(c * d - 1) < kEpsilon) break;
  }
  return h;
}

double regularized_incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * incomplete_beta_fraction(a, b, x) / a;
  return 1 - front * incomplete_beta_fraction(b, a, 1 - x) / b;
}

}  // namespace

double welch_t_p(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2 || b.size() < 2) return 1;
  const Summary sa = summarize(a), sb = summarize(b);
  const double va = sa.stddev * sa.stddev / static_cast<double>(a.size());
  const double vb = sb.stddev * sb.stddev / static_cast<double>(b.size());
  // No spread on either side: any difference at all is certain, none is no evidence.
  if (va + vb == 0) return sa.mean == sb.mean ? 1 : 0;
  const double t = (sa.mean - sb.mean) / std::sqrt(va + vb);
  // Welch-Satterthwaite degrees of freedom.
  const double df = (va + vb) * (va + vb) /
                    (va * va / static_cast<double>(a.size() - 1) + vb * vb / static_cast<double>(b.size() - 1));
  // Two-sided: P(|T| >= |t|) = I_{df / (df + t^2)}(df / 2, 1 / 2).
  return regularized_incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) return 1;

  // Average ranks of the pooled sample, doubled so that a tie's half ranks
  // are whole numbers; tie groups for the variance.
  std::vector<std::pair<double, bool>> pooled;  // value, from a
  for (double v : a) pooled.emplace_back(v, true);
  for (double v : b) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  const std::size_t n = n1 + n2;
  std::vector<std::size_t> doubled_ranks;
  std::size_t doubled_rank_sum_a = 0;
  double tie_term = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    const std::size_t doubled_rank = (i + 1) + j;  // twice the mean of ranks i+1..j
    for (std::size_t k = i; k < j; ++k) {
      doubled_ranks.push_back(doubled_rank);
      if (pooled[k].second) doubled_rank_sum_a += doubled_rank;
    }
    const double t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    i = j;
  }

  if (n1 <= kExactMaxN && n2 <= kExactMaxN)
    return exact_rank_sum_p(doubled_ranks, n1, doubled_rank_sum_a);

  // Normal approximation with tie correction and continuity correction.
  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2), dn = static_cast<double>(n);
  const double u1 = static_cast<double>(doubled_rank_sum_a) / 2 - dn1 * (dn1 + 1) / 2;  // pairs with a > b (ties half)
  const double mean = dn1 * dn2 / 2;
  const double variance = dn1 * dn2 / 12 * ((dn + 1) - tie_term / (dn * (dn - 1)));
  if (variance <= 0) return 1;  // every value equal
  const double z = (std::fabs(u1 - mean) - 0.5) / std::sqrt(variance);
  if (z <= 0) return 1;
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

}  // namespace redline
