// A figure the plan uses, with where it came from (a flag, or a CSV file and
// its rows), so every number in the output can name its source.
#pragma once

#include <cmath>
#include <limits>
#include <string>

namespace redline {

struct Figure {
  double value = std::numeric_limits<double>::quiet_NaN();
  std::string source;  // "--busbw", "run/ar.csv lines 14-17 (...)"

  bool known() const { return !std::isnan(value); }
};

}  // namespace redline
