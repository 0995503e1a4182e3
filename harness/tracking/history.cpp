#include "harness/tracking/history.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "harness/core/atomic_file.hpp"
#include "harness/report/csv_reader.hpp"
#include "harness/report/csv_writer.hpp"
#include "harness/report/report.hpp"
#include "harness/measure/stats.hpp"

namespace redline {

std::string tool_of_entry(const std::string& tool) { return tool.substr(0, tool.find('[')); }

namespace {

const std::vector<std::string>& history_columns() {
  static const std::vector<std::string> columns = {"run_id",   "timestamp_utc", "host",   "gpu",   "tool",
                                                   "case_key", "repetition",    "metric", "value", "status"};
  return columns;
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += csv_field(fields[i]);
  }
  return out + "\r\n";  // RFC 4180, as every redline CSV
}

std::string read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return percentile_sorted(values, 50);
}

// ---------------------------------------------------------------------------
// Trend detection. The method (README, "History"); every figure is robust, so
// one bad night neither hides nor fakes a shift:
//
// Levels are medians. The noise is the series' run-to-run scatter: the
// median absolute deviation of the differences between consecutive runs,
// x 1.4826 / sqrt 2 (a standard deviation for normal noise; a step spoils
// one difference and a bad night two, and a steady slope is taken out with
// the median difference; with a small-sample correction). A change is a finding only when it is larger than
// the threshold (relative, default 5%) AND larger than 4x that noise.
//
// (b) step (a level shift): every boundary between runs is tried with a
//     window of up to 7 runs on each side (at least 3), the windows stopping
//     at shifts already found. A boundary counts when the medians of its two
//     sides pass the test, when it is the best split of its own window (the
//     least absolute deviation from two levels: this puts it exactly at the
//     first run of the new level), and when two levels fit the window better
//     than a straight line (Theil-Sen) does: a slope is a drift, not a step.
//     The boundary that removes the most deviation is taken first, then the
//     next, so a regression and its later fix are two steps. A level shorter
//     than the window (3 nights of a regression, then its fix) is found with
//     a narrower window, whose cut side must hold only runs at the new level.
// (c) drift: with no step found and at least 9 runs, the median of the last
//     third of the series against the median of the first third.
// (a) last-run (a one-night regression): the last run against the median of
//     the up to 7 runs before it (not reaching back past a step), or, on a
//     drifting series, against the drift's Theil-Sen line. A step needs 3 runs
//     at the new level, so until then a new level shows as last-run.
//
// `worse` follows the schema's direction; a metric the schema lacks is never
// called worse. A zero level has no relative change and is not judged.
// ---------------------------------------------------------------------------

constexpr std::size_t kWindow = 7;      // runs per side that define a level
constexpr std::size_t kMinSide = 3;     // runs per side for a step
constexpr double kMadToSigma = 1.4826;  // MAD -> standard deviation (normal noise)
constexpr double kSigmas = 4;

double abs_deviation(const std::vector<double>& v, std::size_t lo, std::size_t hi, double level) {
  double sum = 0;
  for (std::size_t i = lo; i < hi; ++i) sum += std::fabs(v[i] - level);
  return sum;
}

double median_range(const std::vector<double>& v, std::size_t lo, std::size_t hi) {
  return median_of(std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(lo),
                                       v.begin() + static_cast<std::ptrdiff_t>(hi)));
}

// Sum of absolute residuals when v[lo, k) and v[k, hi) each sit at their median.
double two_level_deviation(const std::vector<double>& v, std::size_t lo, std::size_t k, std::size_t hi) {
  return abs_deviation(v, lo, k, median_range(v, lo, k)) + abs_deviation(v, k, hi, median_range(v, k, hi));
}

// A robust straight line through v[lo, hi) (Theil-Sen: the median of the
// pairwise slopes), as value = intercept + slope x run index.
struct Line {
  double intercept = 0, slope = 0;
  double at(std::size_t i) const { return intercept + slope * static_cast<double>(i); }
};

Line theil_sen(const std::vector<double>& v, std::size_t lo, std::size_t hi) {
  std::vector<double> slopes;
  for (std::size_t i = lo; i < hi; ++i)
    for (std::size_t j = i + 1; j < hi; ++j) slopes.push_back((v[j] - v[i]) / static_cast<double>(j - i));
  Line line;
  line.slope = slopes.empty() ? 0 : median_of(slopes);
  std::vector<double> intercepts;
  for (std::size_t i = lo; i < hi; ++i) intercepts.push_back(v[i] - line.slope * static_cast<double>(i));
  line.intercept = median_of(intercepts);
  return line;
}

double line_deviation(const std::vector<double>& v, std::size_t lo, std::size_t hi) {
  const Line line = theil_sen(v, lo, hi);
  double sum = 0;
  for (std::size_t i = lo; i < hi; ++i) sum += std::fabs(v[i] - line.at(i));
  return sum;
}

// The series' run-to-run scatter as a standard deviation: the MAD of the
// differences between consecutive runs, / sqrt 2 (a difference holds two
// runs' noise). A step spoils one difference and a bad night two, so neither
// inflates it; the median difference is taken out first, so a steady slope
// does not either.
double run_to_run_noise(const std::vector<double>& v) {
  if (v.size() < 3) return 0;
  std::vector<double> diffs;
  for (std::size_t i = 1; i < v.size(); ++i) diffs.push_back(v[i] - v[i - 1]);
  const double typical = median_of(diffs);
  for (double& d : diffs) d = std::fabs(d - typical);
  // The MAD of few values runs low; n / (n - 0.8) is Croux and Rousseeuw's small-sample correction.
  const double k = static_cast<double>(diffs.size());
  return kMadToSigma * k / (k - 0.8) * median_of(diffs) / std::sqrt(2.0);
}

// A change is a finding when it beats both the threshold and the noise.
bool significant(double before, double after, double sigma, double threshold) {
  if (before == 0 || !std::isfinite(before) || !std::isfinite(after)) return false;
  const double delta = std::fabs(after - before);
  return delta > threshold * std::fabs(before) && delta > kSigmas * sigma;
}

struct StepCandidate {
  std::size_t at = 0;  // first run of the new level
  double before = 0, after = 0, gain = 0;
};

// The boundary k judged with the window v[from, to).
std::optional<StepCandidate> judge_window(const std::vector<double>& v, std::size_t from, std::size_t k, std::size_t to,
                                          double sigma, double threshold) {
  const double before = median_range(v, from, k), after = median_range(v, k, to);
  const double two_levels = two_level_deviation(v, from, k, to);
  const double one_level = abs_deviation(v, from, to, median_range(v, from, to));
  if (!significant(before, after, sigma, threshold)) return std::nullopt;
  // The boundary must be where its own window splits best: near a shift,
  // neighbouring boundaries see the same medians, but only one fits.
  for (std::size_t j = from + 1; j < to; ++j)
    if (j != k && two_level_deviation(v, from, j, to) < two_levels) return std::nullopt;
  if (line_deviation(v, from, to) <= two_levels) return std::nullopt;  // a slope, not a step
  return StepCandidate{k, before, after, one_level - two_levels};
}

// Every run of v[lo, hi) is away from `old_level`, beyond the threshold and
// the noise, on the side of `new_level`.
bool all_at_new_level(const std::vector<double>& v, std::size_t lo, std::size_t hi, double old_level, double new_level,
                      double sigma, double threshold) {
  for (std::size_t i = lo; i < hi; ++i)
    if (!significant(old_level, v[i], sigma, threshold) || (v[i] > old_level) != (new_level > old_level)) return false;
  return true;
}

// The boundary k judged within [lo, hi): the window up to kWindow runs each
// side. A level that lasted fewer runs than that (a regression fixed three
// nights later) is outvoted in the full window by the level after it, so
// narrower windows are tried too; a side shorter than kWindow (cut here, or by
// the series' end or an earlier step) must hold only runs at its new level,
// so two bad nights (a median of 3 would take them) are no step.
std::optional<StepCandidate> judge_boundary(const std::vector<double>& v, std::size_t lo, std::size_t hi,
                                            std::size_t k, double sigma, double threshold) {
  const std::size_t widest_before = std::min(kWindow, k - lo), widest_after = std::min(kWindow, hi - k);
  if (widest_before < kMinSide || widest_after < kMinSide) return std::nullopt;
  for (std::size_t after = widest_after; after >= kMinSide; --after) {
    for (std::size_t before = widest_before; before >= kMinSide; --before) {
      auto step = judge_window(v, k - before, k, k + after, sigma, threshold);
      if (!step) continue;
      // Short of a full window, whether cut here or by the series' end or an
      // earlier step: two bad nights at the end are no step either.
      if (after < kWindow && !all_at_new_level(v, k, k + after, step->before, step->after, sigma, threshold)) continue;
      if (before < kWindow && !all_at_new_level(v, k - before, k, step->after, step->before, sigma, threshold)) continue;
      return step;
    }
  }
  return std::nullopt;
}

std::vector<StepCandidate> find_steps(const std::vector<double>& v, double sigma, double threshold) {
  std::vector<StepCandidate> steps;  // kept sorted by position
  for (;;) {
    std::optional<StepCandidate> best;
    for (std::size_t k = kMinSide; k + kMinSide <= v.size(); ++k) {
      // Windows stop at the steps already found, and steps stay kMinSide apart.
      std::size_t lo = 0, hi = v.size();
      bool taken = false;
      for (const auto& s : steps) {
        if (s.at == k) taken = true;
        if (s.at < k) lo = std::max(lo, s.at);
        if (s.at > k) hi = std::min(hi, s.at);
      }
      if (taken) continue;
      auto candidate = judge_boundary(v, lo, hi, k, sigma, threshold);
      if (candidate && (!best || candidate->gain > best->gain)) best = candidate;
    }
    if (!best) break;
    steps.insert(std::upper_bound(steps.begin(), steps.end(), *best,
                                  [](const StepCandidate& a, const StepCandidate& b) { return a.at < b.at; }),
                 *best);
  }
  return steps;
}

double relative_change(double before, double after) { return (after - before) / std::fabs(before); }

}  // namespace

void append_history(const std::filesystem::path& history_csv, const RunResults& run) {
  std::string lines;
  for (const auto& row : run.rows) {
    if (row.status != RowStatus::ok) continue;  // a failed row has no values to track
    for (const auto& [metric, value] : row.metrics) {
      if (!std::isfinite(value)) continue;
      lines += csv_line({row.run_id, row.timestamp_utc, row.host, row.gpu, series_tool(row), row.case_key,
                         std::to_string(row.repetition), metric, metric_text(value), "ok"});
    }
  }
  if (lines.empty()) return;

  // Two suites finishing at once must not both read the old file and each
  // write back only their own rows: appends take a lock beside the file.
  if (!history_csv.parent_path().empty()) std::filesystem::create_directories(history_csv.parent_path());
  const std::string lock_path = history_csv.string() + ".lock";
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0 || ::flock(lock_fd, LOCK_EX) != 0)
    throw std::runtime_error("cannot lock " + lock_path + ": " + std::strerror(errno));
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }  // closing releases the lock
  } unlock{lock_fd};

  std::string prefix;
  const bool fresh = !std::filesystem::exists(history_csv) || std::filesystem::file_size(history_csv) == 0;
  if (fresh) {
    prefix = csv_line(history_columns());
  } else {
    // Never append rows under someone else's header.
    const std::string old = read_whole_file(history_csv);
    std::string first = old.substr(0, old.find('\n'));
    if (!first.empty() && first.back() == '\r') first.pop_back();
    std::string expected = csv_line(history_columns());
    expected.resize(expected.size() - 2);
    if (first != expected)
      throw std::runtime_error(history_csv.string() + ":1: not a redline history file (expected the header " +
                               expected + ")");
    if (old.back() != '\n') prefix = "\r\n";
  }
  append_file_atomically(history_csv, prefix + lines);
}

namespace {

// Values grouped by (tool, case, metric) and run: the shape of a history,
// whether read from history.csv or from one run's rows.
class SeriesGroups {
 public:
  void add(const std::string& tool, const std::string& case_key, const std::string& metric, const std::string& run_id,
           const std::string& timestamp_utc, double value) {
    auto& run = groups_[{tool, case_key, metric}][run_id];
    if (run.timestamp_utc.empty() || (!timestamp_utc.empty() && timestamp_utc < run.timestamp_utc))
      run.timestamp_utc = timestamp_utc;
    run.values.push_back(value);
  }

  // One point per run (the median of its repetitions), runs in time order;
  // numbers in keys read as numbers (batch_size=2 before batch_size=16).
  std::vector<HistorySeries> series() const {
    std::vector<HistorySeries> out;
    for (const auto& [key, runs] : groups_) {
      HistorySeries s;
      std::tie(s.tool, s.case_key, s.metric) = key;
      for (const auto& [run_id, run] : runs) s.points.push_back({run_id, run.timestamp_utc, median_of(run.values)});
      std::sort(s.points.begin(), s.points.end(), [](const HistoryPoint& a, const HistoryPoint& b) {
        return std::tie(a.timestamp_utc, a.run_id) < std::tie(b.timestamp_utc, b.run_id);
      });
      out.push_back(std::move(s));
    }
    std::stable_sort(out.begin(), out.end(), [](const HistorySeries& a, const HistorySeries& b) {
      if (a.tool != b.tool) return natural_less(a.tool, b.tool);
      if (a.case_key != b.case_key) return natural_less(a.case_key, b.case_key);
      return a.metric < b.metric;
    });
    return out;
  }

 private:
  struct RunValues {
    std::string timestamp_utc;
    std::vector<double> values;
  };
  std::map<std::tuple<std::string, std::string, std::string>, std::map<std::string, RunValues>> groups_;
};

}  // namespace

std::vector<HistorySeries> load_history(const std::filesystem::path& history_csv, const std::string& case_filter,
                                        const std::string& metric_filter) {
  const CsvTable table = read_csv(history_csv);
  for (const char* column : {"run_id", "timestamp_utc", "tool", "case_key", "metric", "value", "status"})
    if (!table.column(column))
      throw std::runtime_error(history_csv.string() + ":1: not a redline history file (no '" + column + "' column)");
  SeriesGroups groups;
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    const std::string& status = table.value(r, "status");
    const std::string& text = table.value(r, "value");
    if ((!status.empty() && status != "ok") || text.empty()) continue;
    const std::string& case_key = table.value(r, "case_key");
    const std::string& metric = table.value(r, "metric");
    if (case_key.find(case_filter) == std::string::npos || metric.find(metric_filter) == std::string::npos) continue;
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
      throw CsvError(history_csv.string(), table.row_lines[r], "value '" + text + "' is not a number");
    groups.add(table.value(r, "tool"), case_key, metric, table.value(r, "run_id"), table.value(r, "timestamp_utc"), value);
  }
  return groups.series();
}

std::vector<HistorySeries> history_series(const RunResults& run) {
  SeriesGroups groups;
  for (const ResultRow& row : run.rows) {
    if (row.status != RowStatus::ok) continue;
    for (const auto& [metric, value] : row.metrics)
      if (std::isfinite(value)) groups.add(series_tool(row), row.case_key, metric, row.run_id, row.timestamp_utc, value);
  }
  return groups.series();
}

std::vector<TrendFinding> detect_trends(const HistorySeries& series, const Schema& schema, double threshold) {
  std::vector<double> v;
  for (const auto& p : series.points) v.push_back(p.value);
  const std::size_t n = v.size();
  std::vector<TrendFinding> findings;
  if (n < 2) return findings;

  const auto spec = schema.find(series.metric);
  auto finding = [&](std::string kind, std::size_t at, double before, double after) {
    TrendFinding f;
    f.kind = std::move(kind);
    f.run_id = series.points[at].run_id;
    f.before = before;
    f.after = after;
    f.change = relative_change(before, after);
    f.worse = spec && (spec->better == Better::higher ? f.change < 0 : f.change > 0);
    return f;
  };

  const double sigma = run_to_run_noise(v);
  const auto steps = find_steps(v, sigma, threshold);
  for (const auto& s : steps) findings.push_back(finding("step", s.at, s.before, s.after));

  // (c) A slow drift: first third against last third, when no step explains it.
  bool drifting = false;
  if (steps.empty() && n >= 9) {
    const std::size_t third = n / 3;
    const double before = median_range(v, 0, third), after = median_range(v, n - third, n);
    drifting = significant(before, after, sigma, threshold);
    if (drifting) findings.push_back(finding("drift", n - 1, before, after));
  }

  // (a) The last run against the runs before it, not reaching back past a
  // step; on a drifting series, against where the drift's line says it
  // should be, so a steady slope is reported once, as the drift.
  std::size_t from = n - 1 >= kWindow ? n - 1 - kWindow : 0;
  if (!steps.empty()) from = std::max(from, steps.back().at);
  if (from < n - 1) {
    const double before = drifting ? theil_sen(v, 0, n - 1).at(n - 1) : median_range(v, from, n - 1);
    if (significant(before, v.back(), sigma, threshold))
      findings.insert(findings.end() - (drifting ? 1 : 0), finding("last-run", n - 1, before, v.back()));
  }
  return findings;
}

}  // namespace redline
