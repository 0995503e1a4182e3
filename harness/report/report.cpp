#include "harness/report/report.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace redline {
namespace {

template <typename Pairs>
void add_names(const Pairs& pairs, std::vector<std::string>& names) {
  for (const auto& [name, value] : pairs)
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

}  // namespace

std::string Row::case_key() const {
  std::string key;
  for (const auto& [name, value] : params) {
    if (!key.empty()) key += ';';
    key += name + '=' + value;
  }
  return key;
}

Row& Row::param(std::string name, std::string value) {
  // case_key joins "name=value" with ';': either character there would make
  // one case read back as another (a tool's bug, caught where it is made).
  if (name.find_first_of(";=") != std::string::npos || value.find(';') != std::string::npos)
    throw std::logic_error("parameter " + name + "=" + value + " holds a ';' or its name a '=': its case_key would not read back");
  params.emplace_back(std::move(name), std::move(value));
  return *this;
}

Row& Row::metric(std::string name, double value) {
  metrics.emplace_back(std::move(name), value);
  return *this;
}

std::optional<std::string> Row::param_value(const std::string& name) const {
  for (const auto& [key, value] : params)
    if (key == name) return value;
  return std::nullopt;
}

std::optional<double> Row::metric_value(const std::string& name) const {
  for (const auto& [key, value] : metrics)
    if (key == name) return value;
  return std::nullopt;
}

std::vector<std::string> Report::param_names() const {
  std::vector<std::string> names;
  for (const auto& row : rows) add_names(row.params, names);
  return names;
}

std::vector<std::string> Report::metric_names() const {
  std::vector<std::string> names;
  for (const auto& row : rows) add_names(row.metrics, names);
  return names;
}

Report start_report(std::string tool, Environment env) {
  Report report;
  report.tool = std::move(tool);
  // Under `redline suite` every tool's rows carry the suite's run id, so the
  // run folder, its CSVs and the history all name the same run.
  const char* suite_run = std::getenv("REDLINE_RUN_ID");
  report.run_id = suite_run && *suite_run ? suite_run : make_run_id(env.host);
  report.env = std::move(env);
  return report;
}

std::string metric_text(double value) {
  // Blank, as in the JSON's null: "inf" would make the whole CSV unreadable to
  // the results reader, which takes only finite numbers.
  if (!std::isfinite(value)) return "";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return ec == std::errc() ? std::string(buf, end) : std::string();
}

std::vector<std::pair<std::string, std::string>> case_key_params(const std::string& key) {
  std::vector<std::pair<std::string, std::string>> params;
  std::size_t start = 0;
  while (start < key.size()) {
    const std::size_t end = std::min(key.find(';', start), key.size());
    const std::size_t eq = key.find('=', start);
    if (eq < end) params.emplace_back(key.substr(start, eq - start), key.substr(eq + 1, end - eq - 1));
    start = end + 1;
  }
  return params;
}

std::optional<double> parameter_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// -1, 0, 1: the digit runs starting at a[i] and b[j] by value (leading zeros
// ignored); i and j move past them.
int compare_digit_runs(const std::string& a, std::size_t& i, const std::string& b, std::size_t& j) {
  while (i + 1 < a.size() && a[i] == '0' && is_digit(a[i + 1])) ++i;
  while (j + 1 < b.size() && b[j] == '0' && is_digit(b[j + 1])) ++j;
  const std::size_t a0 = i, b0 = j;
  while (i < a.size() && is_digit(a[i])) ++i;
  while (j < b.size() && is_digit(b[j])) ++j;
  if (i - a0 != j - b0) return i - a0 < j - b0 ? -1 : 1;
  const int c = a.compare(a0, i - a0, b, b0, j - b0);
  return c < 0 ? -1 : c > 0 ? 1 : 0;
}

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  bool after_point = false;  // a decimal part compares digit by digit, as text
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j]) && !after_point) {
      if (const int c = compare_digit_runs(a, i, b, j)) return c < 0;
      after_point = i + 1 < a.size() && j + 1 < b.size() && a[i] == '.' && b[j] == '.' && is_digit(a[i + 1]) &&
                    is_digit(b[j + 1]);
      if (after_point) ++i, ++j;
      continue;
    }
    if (after_point && is_digit(a[i]) != is_digit(b[j])) return !is_digit(a[i]);  // 0.5 before 0.55
    if (a[i] != b[j]) return a[i] < b[j];
    after_point = after_point && is_digit(a[i]);
    ++i, ++j;
  }
  if (i < a.size() || j < b.size()) return i == a.size();  // a prefix first
  return a < b;  // equal as numbers ("08" and "8"): any fixed order
}

}  // namespace redline
