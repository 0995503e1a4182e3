#include "harness/report/report.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

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
  if (std::isnan(value)) return "";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return ec == std::errc() ? std::string(buf, end) : std::string();
}

}  // namespace redline
