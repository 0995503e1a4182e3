#include "harness/report/console_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/core/units.hpp"

namespace redline {

std::string human_number(double value) {
  if (std::isnan(value)) return "-";
  const double mag = std::fabs(value);
  // Whole numbers (counts: tiles, waves, ranks) read as whole numbers.
  if (value == std::floor(value) && mag < 1e15) return format_number(value, 0);
  if (mag >= 1e15 || (mag > 0 && mag < 1e-3)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3e", value);
    return buf;
  }
  // Below 1 the leading zeros are not significant: 0.5000, 0.01234, 0.001234.
  const int digits = mag >= 1000 ? 0 : mag >= 100 ? 1 : mag >= 10 ? 2
                     : mag >= 1 || mag == 0 ? 3 : 3 - static_cast<int>(std::floor(std::log10(mag)));
  return format_number(value, digits);
}

std::string format_table(const std::vector<std::vector<std::string>>& cells,
                         const std::vector<bool>& right_aligned) {
  if (cells.empty()) return "";
  std::vector<std::size_t> width(cells.front().size(), 0);
  for (const auto& row : cells)
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (std::size_t r = 0; r < cells.size(); ++r) {
    std::string line;
    for (std::size_t c = 0; c < cells[r].size() && c < width.size(); ++c) {
      const std::string& cell = cells[r][c];
      const std::string pad(width[c] - cell.size(), ' ');
      if (c) line += "  ";
      line += (c < right_aligned.size() && right_aligned[c]) ? pad + cell : cell + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
    if (r == 0) {
      std::size_t total = 0;
      for (auto w : width) total += w;
      out += std::string(total + 2 * (width.size() - 1), '-') + '\n';
    }
  }
  return out;
}

std::string to_console_table(const Report& report) {
  const auto params = report.param_names();
  const auto metrics = report.metric_names();
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header(params);
  header.insert(header.end(), metrics.begin(), metrics.end());
  header.push_back("status");
  header.push_back("note");
  cells.push_back(header);
  std::vector<bool> right(header.size(), true);
  right[right.size() - 1] = right[right.size() - 2] = false;

  for (const auto& row : report.rows) {
    std::vector<std::string> line;
    for (const auto& name : params) {
      line.push_back(row.param_value(name).value_or(""));
    }
    for (const auto& name : metrics) {
      const auto value = row.metric_value(name);
      line.push_back(value ? human_number(*value) : "-");
    }
    line.push_back(to_string(row.status));
    // The console keeps notes short; the CSV and JSON have them whole.
    constexpr std::size_t kNoteWidth = 60;
    line.push_back(row.note.size() > kNoteWidth ? row.note.substr(0, kNoteWidth - 3) + "..." : row.note);
    cells.push_back(line);
  }
  std::string out = format_table(cells, right);
  if (!report.summary.empty()) {
    out += '\n';
    std::size_t width = 0;
    for (const auto& [name, value] : report.summary) width = std::max(width, name.size());
    for (const auto& [name, value] : report.summary)
      out += name + ':' + std::string(width + 2 - name.size(), ' ') + value + '\n';
  }
  return out;
}

}  // namespace redline
