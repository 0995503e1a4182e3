#include "harness/plan/csv_cells.hpp"

#include "harness/core/usage_error.hpp"
#include "harness/report/report.hpp"

namespace redline {

void require_columns(const CsvTable& table, const std::string& file, const std::string& flag,
                     std::initializer_list<const char*> names, const std::string& what) {
  for (const char* name : names)
    if (!table.column(name))
      throw UsageError(flag, file, std::string("has no '") + name + "' column (" + what + ")");
}

double cell_number(const CsvTable& table, std::size_t row, const char* column, const std::string& file,
                   const std::string& flag) {
  const std::string& text = table.value(row, column);
  const auto value = parameter_number(text);
  if (!value)
    throw UsageError(flag, file, "line " + std::to_string(table.row_lines[row]) + ": '" + column + "' is '" + text +
                                     "', not a number");
  return *value;
}

}  // namespace redline
