#include "harness/report/run_results.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "harness/report/csv_reader.hpp"

namespace redline {

std::string ResultRow::param(const std::string& name) const {
  const auto it = params.find(name);
  return it == params.end() ? std::string() : it->second;
}

std::optional<double> ResultRow::metric(const std::string& name) const {
  const auto it = metrics.find(name);
  return it == metrics.end() ? std::nullopt : std::optional<double>(it->second);
}
namespace fs = std::filesystem;
namespace {

// results/SCHEMA.md: the columns every tool's CSV carries.
const char* const kCommonColumns[] = {"run_id", "timestamp_utc", "host", "gpu", "tool",
                                      "case_key", "repetition", "status", "note"};

// "batch_size=32;dtype=float" -> {{batch_size, 32}, {dtype, float}}.
std::vector<std::pair<std::string, std::string>> split_case_key(const std::string& key, const std::string& file,
                                                                std::size_t line) {
  std::vector<std::pair<std::string, std::string>> params;
  if (key.empty()) return params;
  std::size_t start = 0;
  while (start <= key.size()) {
    const std::size_t end = std::min(key.find(';', start), key.size());
    const std::string part = key.substr(start, end - start);
    const std::size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0)
      throw CsvError(file, line, "case_key \"" + key + "\": \"" + part + "\" is not name=value");
    params.emplace_back(part.substr(0, eq), part.substr(eq + 1));
    start = end + 1;
  }
  return params;
}

// A decimal number that is finite. strtod also reads hexadecimal ("0x10" as
// 16), which no writer of ours produces, so a cell holding it is refused; it
// flags a subnormal (1e-320) with ERANGE, yet that is a finite number, and an
// overflow shows as inf.
bool parse_finite(const std::string& text, double& value) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return false;
  if (text.find_first_of("xX") != std::string::npos) return false;
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(value);
}

// A column named twice would be read as whichever came last: refuse it.
void refuse_duplicate_columns(const CsvTable& table, const std::string& file) {
  std::set<std::string> seen;
  for (const auto& name : table.header)
    if (!seen.insert(name).second) throw CsvError(file, 1, "column \"" + name + "\" appears twice in the header");
}

void load_csv(const fs::path& path, std::vector<ResultRow>& rows) {
  const std::string file = path.string();
  const CsvTable table = read_csv(path);
  refuse_duplicate_columns(table, file);
  for (const char* name : kCommonColumns)
    if (!table.column(name))
      throw CsvError(file, 1, std::string("not a redline results CSV: no \"") + name + "\" column");

  // Parameters are the names in any row's case key; every other column
  // outside the common ones is a metric.
  std::vector<std::vector<std::pair<std::string, std::string>>> keys;
  std::set<std::string> param_names;
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    keys.push_back(split_case_key(table.value(r, "case_key"), file, table.row_lines[r]));
    for (const auto& [name, value] : keys.back()) param_names.insert(name);
  }
  std::vector<std::size_t> metric_columns;
  for (std::size_t c = 0; c < table.header.size(); ++c) {
    const std::string& name = table.header[c];
    const bool common = std::find_if(std::begin(kCommonColumns), std::end(kCommonColumns),
                                     [&](const char* n) { return name == n; }) != std::end(kCommonColumns);
    if (!common && !param_names.count(name)) metric_columns.push_back(c);
  }

  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    const std::size_t line = table.row_lines[r];
    ResultRow row;
    row.file = file;
    row.line = line;
    row.run_id = table.value(r, "run_id");
    row.timestamp_utc = table.value(r, "timestamp_utc");
    row.host = table.value(r, "host");
    row.gpu = table.value(r, "gpu");
    row.tool = table.value(r, "tool");
    row.case_key = table.value(r, "case_key");
    const std::string& status = table.value(r, "status");
    const auto parsed = parse_row_status(status);
    if (!parsed)
      throw CsvError(file, line, status.empty() ? "empty status"
                                                : "status \"" + status + "\" is not ok, oom, error, timeout, skipped or wrong");
    row.status = *parsed;
    row.note = table.value(r, "note");
    if (row.tool.empty()) throw CsvError(file, line, "empty tool");
    const std::string& repetition = table.value(r, "repetition");
    double rep = 0;
    if (!parse_finite(repetition, rep) || rep < 0 || rep != std::floor(rep) || rep > 1e9)
      throw CsvError(file, line, "repetition \"" + repetition + "\" is not a non-negative integer");
    row.repetition = static_cast<int>(rep);
    // A parameter's column holds the same value as the key; the key is what
    // identifies the case, so it wins.
    for (const auto& [name, value] : keys[r]) row.params[name] = value;
    for (std::size_t c : metric_columns) {
      const std::string& cell = table.rows[r][c];
      if (cell.empty()) continue;
      double value = 0;
      if (!parse_finite(cell, value))
        throw CsvError(file, line, "column " + table.header[c] + ": \"" + cell + "\" is not a finite number");
      row.metrics[table.header[c]] = value;
    }
    rows.push_back(std::move(row));
  }
}

}  // namespace

RunResults load_results(const fs::path& run_or_csv) {
  RunResults results;
  results.source = run_or_csv.string();
  std::error_code ec;
  if (fs::is_directory(run_or_csv, ec)) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(run_or_csv)) {
      const fs::path& p = entry.path();
      const std::string name = p.filename().string();
      if (p.extension() != ".csv" || name == "suite.csv" || name == "history.csv") continue;
      if (!entry.is_regular_file()) continue;
      files.push_back(p);
    }
    if (files.empty())
      throw std::runtime_error(results.source + ": no results CSV in this folder (suite.csv and history.csv are not results)");
    std::sort(files.begin(), files.end());
    for (const auto& file : files) load_csv(file, results.rows);
  } else if (fs::exists(run_or_csv, ec)) {
    load_csv(run_or_csv, results.rows);
  } else {
    throw std::runtime_error(results.source + ": no such run folder or CSV file");
  }
  return results;
}

std::string pooled_rows_problem(const RunResults& results) {
  std::map<std::string, const ResultRow*> first_of_file;  // file -> its first row
  std::map<std::tuple<std::string, std::string, std::string, int>, const ResultRow*> seen;  // file, tool, case, rep
  for (const ResultRow& row : results.rows) {
    const ResultRow*& first = first_of_file.try_emplace(row.file, &row).first->second;
    if (row.run_id != first->run_id)
      return row.file + ":" + std::to_string(row.line) + ": rows of two runs in one file (run_id '" + first->run_id +
             "' at line " + std::to_string(first->line) + ", '" + row.run_id +
             "' here); they would be judged as one run's repetitions: give one run's rows";
    const auto [it, inserted] = seen.try_emplace({row.file, row.tool, row.case_key, row.repetition}, &row);
    if (!inserted)
      return row.file + ":" + std::to_string(row.line) + ": case '" + row.case_key + "' repetition " +
             std::to_string(row.repetition) + " again (first at line " + std::to_string(it->second->line) +
             "); one run has one row per case and repetition";
  }
  return "";
}

std::string series_tool(const ResultRow& row) {
  const std::string entry = std::filesystem::path(row.file).stem().string();
  return entry.empty() || entry == row.tool ? row.tool : row.tool + "[" + entry + "]";
}

RunResults results_of(const Report& report) {
  RunResults results;
  const std::string gpu = report.env.gpu_summary();
  for (const Row& source : report.rows) {
    ResultRow row;
    row.run_id = report.run_id;
    row.timestamp_utc = report.env.timestamp_utc;
    row.host = report.env.host;
    row.gpu = gpu;
    row.tool = report.tool;
    row.case_key = source.case_key();
    row.repetition = source.repetition;
    row.status = source.status;
    row.note = source.note;
    for (const auto& [name, value] : source.params) row.params[name] = value;
    // An empty CSV cell (not measured) reads back as no metric at all.
    for (const auto& [name, value] : source.metrics)
      if (std::isfinite(value)) row.metrics[name] = value;
    results.rows.push_back(std::move(row));
  }
  return results;
}

}  // namespace redline
