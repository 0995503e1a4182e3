// Parsing and printing of sizes and counts as users type them: 8, 4K, 64M, 8G
// are binary multiples (K = 1024). Every parse error is a UsageError naming
// the flag and the value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace redline {

// "64M" -> 67108864. Accepts an optional trailing B/iB ("64MiB", "64MB" are
// also binary: users copy sizes from nccl-tests, which treats M as 2^20).
std::uint64_t parse_size(std::string_view flag, std::string_view text);

// A plain non-negative integer count (iterations, batch sizes). No suffixes.
std::int64_t parse_count(std::string_view flag, std::string_view text);

// parse_count, then lo <= value <= hi, else a UsageError naming the bounds.
std::int64_t parse_count_between(std::string_view flag, std::string_view text, std::int64_t lo, std::int64_t hi);

// A finite floating-point value, e.g. a percentage or seconds.
double parse_number(std::string_view flag, std::string_view text);

// Checks for the common constraints, throwing UsageError with the reason.
void require_positive(std::string_view flag, std::string_view text, double value);
void require_in_range(std::string_view flag, std::string_view text, double value, double lo, double hi);

// 67108864 -> "64M", 1536 -> "1.5K", 100 -> "100". Exact multiples print
// without decimals so the output parses back to the same size.
std::string format_size(std::uint64_t bytes);

// Fixed-point with `digits` decimals, "nan" for NaN: the one place floats are
// turned into text for tables and CSV.
std::string format_number(double value, int digits);

// `significant` digits, an exponent only past them: 86400000 and 0.001 as
// written, 1e+15, 1.953e+297. For bounds and magnitudes in messages.
std::string format_general(double value, int significant);

// `significant` digits in fixed point, never an exponent: 0.0412, 1.23,
// 12.3, 456, 1234 (digits before the point are kept). For figures that span
// decades in one table, such as a slow group's busbw beside a healthy one's.
std::string format_significant(double value, int significant);

// 0.125 -> "12.5%" (format_number of the percentage, `digits` decimals).
std::string format_percent(double fraction, int digits = 1);
// Bytes in GiB, "1.50 GiB".
std::string format_gib(double bytes, int digits = 2);

}  // namespace redline
