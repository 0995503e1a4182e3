// The aligned console table every tool prints: parameters, metrics, status,
// then the summary lines. Numbers are right-aligned.
#pragma once

#include <string>
#include <vector>

#include "harness/report/report.hpp"

namespace redline {

// Generic aligned table: the first row is the header.
std::string format_table(const std::vector<std::vector<std::string>>& cells,
                         const std::vector<bool>& right_aligned);

// A metric for humans: 4 significant digits, no exponent for everyday sizes.
std::string human_number(double value);

std::string to_console_table(const Report& report);

}  // namespace redline
