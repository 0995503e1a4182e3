#include "harness/report/schema.hpp"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#ifndef REDLINE_SOURCE_DIR
#define REDLINE_SOURCE_DIR "."
#endif

namespace redline {
namespace {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

// "| a | b \| c |" -> {"a", "b | c"}: the cells of one Markdown table row.
std::vector<std::string> table_cells(const std::string& line) {
  std::string text = trim(line);
  if (!text.empty() && text.front() == '|') text.erase(0, 1);
  if (!text.empty() && text.back() == '|' && !(text.size() >= 2 && text[text.size() - 2] == '\\')) text.pop_back();
  std::vector<std::string> cells;
  std::string cell;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (text[i] == '|') {
      cells.push_back(trim(cell));
      cell.clear();
    } else {
      cell += text[i];
    }
  }
  cells.push_back(trim(cell));
  return cells;
}

bool is_separator_row(const std::vector<std::string>& cells) {
  for (const auto& cell : cells) {
    if (cell.empty()) return false;
    for (char c : cell)
      if (c != '-' && c != ':') return false;
  }
  return true;
}

bool is_metric_name(const std::string& name) {
  const std::size_t start = !name.empty() && name.front() == '*' ? 1 : 0;
  if (name.size() <= start) return false;
  for (std::size_t i = start; i < name.size(); ++i) {
    const char c = name[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

[[noreturn]] void fail(const std::string& source, std::size_t line, const std::string& problem) {
  throw std::runtime_error(source + ":" + std::to_string(line) + ": " + problem);
}

}  // namespace

Schema Schema::parse(const std::string& markdown, const std::string& source) {
  std::vector<std::string> lines;
  {
    std::istringstream in(markdown);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  std::size_t i = 0;
  while (i < lines.size() && trim(lines[i]) != "## Metrics") ++i;
  if (i == lines.size()) fail(source, 1, "no \"## Metrics\" section");
  const std::size_t section_line = i + 1;

  // The table is the first '|' line of the section, before the next heading.
  ++i;
  while (i < lines.size() && trim(lines[i]).rfind('|', 0) != 0) {
    if (trim(lines[i]).rfind("#", 0) == 0) break;
    ++i;
  }
  if (i == lines.size() || trim(lines[i]).rfind('|', 0) != 0)
    fail(source, section_line, "the \"## Metrics\" section has no table");

  const auto header = table_cells(lines[i]);
  const std::size_t header_line = i + 1;
  auto column = [&](const std::string& name) {
    for (std::size_t c = 0; c < header.size(); ++c)
      if (header[c] == name) return c;
    fail(source, header_line, "the metrics table has no \"" + name + "\" column");
  };
  const std::size_t metric_col = column("metric"), unit_col = column("unit"), better_col = column("better"),
                    tracked_col = column("tracked");
  ++i;
  if (i == lines.size() || !is_separator_row(table_cells(lines[i])))
    fail(source, i + 1, "expected the table's |---| line under its header");
  ++i;

  Schema schema;
  for (; i < lines.size() && trim(lines[i]).rfind('|', 0) == 0; ++i) {
    const std::size_t line = i + 1;
    const auto cells = table_cells(lines[i]);
    if (cells.size() != header.size())
      fail(source, line,
           "expected " + std::to_string(header.size()) + " cells, found " + std::to_string(cells.size()));
    MetricSpec spec;
    spec.name = cells[metric_col];
    if (spec.name.size() >= 2 && spec.name.front() == '`' && spec.name.back() == '`')
      spec.name = spec.name.substr(1, spec.name.size() - 2);
    if (!is_metric_name(spec.name))
      fail(source, line, "metric \"" + cells[metric_col] + "\" is not a column name (or *suffix pattern)");
    spec.unit = cells[unit_col];
    if (cells[better_col] == "higher") spec.better = Better::higher;
    else if (cells[better_col] == "lower") spec.better = Better::lower;
    else fail(source, line, "better is \"" + cells[better_col] + "\" for " + spec.name + ", expected higher or lower");
    if (cells[tracked_col] == "yes") spec.tracked = true;
    else if (cells[tracked_col] == "no") spec.tracked = false;
    else fail(source, line, "tracked is \"" + cells[tracked_col] + "\" for " + spec.name + ", expected yes or no");
    for (const auto& known : schema.metrics_)
      if (known.name == spec.name) fail(source, line, "metric " + spec.name + " is listed twice");
    schema.metrics_.push_back(std::move(spec));
  }
  if (schema.metrics_.empty()) fail(source, header_line, "the metrics table has no rows");
  return schema;
}

Schema Schema::load(const std::filesystem::path& schema_md) {
  std::ifstream in(schema_md, std::ios::binary);
  if (!in) throw std::runtime_error(schema_md.string() + ": cannot open the schema");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), schema_md.string());
}

std::optional<MetricSpec> Schema::find(const std::string& metric) const {
  for (const auto& spec : metrics_)
    if (spec.name == metric) return spec;
  for (const auto& spec : metrics_) {
    if (spec.name.empty() || spec.name.front() != '*') continue;
    const std::string suffix = spec.name.substr(1);
    if (metric.size() > suffix.size() && metric.compare(metric.size() - suffix.size(), suffix.size(), suffix) == 0)
      return spec;
  }
  return std::nullopt;
}

std::filesystem::path default_schema_path() {
  if (const char* env = std::getenv("REDLINE_SCHEMA"); env && *env) return env;
  return std::filesystem::path(REDLINE_SOURCE_DIR) / "results" / "SCHEMA.md";
}

}  // namespace redline
