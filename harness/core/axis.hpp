// A sweep's size axis as users write it:
//   list       "1,2,4,8"
//   linear     "8:64:8"        start:stop:step
//              "8:64"          start:stop, a step of 1
//   geometric  "1:1024:x2"     start:stop:xFACTOR
// Values are parsed by parse_size when `sizes` is set (so "4K:64M:x2" works),
// otherwise as plain counts. The result is ascending and free of duplicates.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace redline {

enum class AxisUnit { count, bytes };

std::vector<std::int64_t> parse_axis(std::string_view flag, std::string_view text, AxisUnit unit);

// parse_axis of counts whose every value lies in [lo, hi]: a UsageError
// naming the flag and the text otherwise ("--batch '0,2': every value must
// be between 1 and 1048576").
std::vector<std::int64_t> parse_count_axis_between(std::string_view flag, std::string_view text, std::int64_t lo,
                                                   std::int64_t hi);

// start, start*factor, ... up to and including stop. A non-integer factor is
// rounded up per step so every value is a new, larger whole number. At most
// 100000 values: callers check that the last one reached `stop`. Values must
// be at most 2^50 (parse_axis enforces it).
std::vector<std::int64_t> geometric_axis(std::int64_t start, std::int64_t stop, double factor);

}  // namespace redline
