// Reading numbers out of another tool's CSV for the plan: a missing column or
// a cell that is not a number is bad input (exit 2) naming the flag that gave
// the file, the file, and the column or line.
#pragma once

#include <initializer_list>
#include <string>

#include "harness/report/csv_reader.hpp"

namespace redline {

void require_columns(const CsvTable& table, const std::string& file, const std::string& flag,
                     std::initializer_list<const char*> names, const std::string& what);

double cell_number(const CsvTable& table, std::size_t row, const char* column, const std::string& file,
                   const std::string& flag);

}  // namespace redline
