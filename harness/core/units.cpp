#include "harness/core/units.hpp"

#include <algorithm>
#include <cstdint>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "harness/core/usage_error.hpp"

namespace redline {
namespace {

std::string str(std::string_view s) { return std::string(s); }

int suffix_shift(char c) {
  switch (std::toupper(static_cast<unsigned char>(c))) {
    case 'K': return 10;
    case 'M': return 20;
    case 'G': return 30;
    case 'T': return 40;
    default: return -1;
  }
}

}  // namespace

std::uint64_t parse_size(std::string_view flag, std::string_view text) {
  const std::string problem = "expected a size such as 8, 4K, 64M or 8G";
  if (text.empty()) throw UsageError(str(flag), str(text), problem);
  std::string_view rest = text;
  // Drop an optional B / iB so 64MB, 64MiB and 64M all read the same.
  if (!rest.empty() && (rest.back() == 'B' || rest.back() == 'b')) {
    rest.remove_suffix(1);
    if (!rest.empty() && (rest.back() == 'i' || rest.back() == 'I')) rest.remove_suffix(1);
  }
  int shift = 0;
  if (!rest.empty() && suffix_shift(rest.back()) >= 0) {
    shift = suffix_shift(rest.back());
    rest.remove_suffix(1);
  }
  if (rest.empty()) throw UsageError(str(flag), str(text), problem);
  // Allow a fraction with a suffix ("1.5K") as long as the result is whole.
  double mantissa = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), mantissa);
  if (ec != std::errc() || end != rest.data() + rest.size() || !std::isfinite(mantissa))
    throw UsageError(str(flag), str(text), problem);
  if (mantissa < 0) throw UsageError(str(flag), str(text), "a size cannot be negative");
  const double bytes = std::ldexp(mantissa, shift);
  if (bytes >= 18446744073709551616.0) throw UsageError(str(flag), str(text), "size is too large");
  if (bytes != std::floor(bytes)) throw UsageError(str(flag), str(text), "size is not a whole number of bytes");
  return static_cast<std::uint64_t>(bytes);
}

std::int64_t parse_count(std::string_view flag, std::string_view text) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec == std::errc::invalid_argument || end != text.data() + text.size())
    throw UsageError(str(flag), str(text), "expected a whole number");
  if (ec == std::errc::result_out_of_range) throw UsageError(str(flag), str(text), "number is too large");
  if (value < 0) throw UsageError(str(flag), str(text), "must not be negative");
  return value;
}

std::int64_t parse_count_between(std::string_view flag, std::string_view text, std::int64_t lo, std::int64_t hi) {
  const auto value = parse_count(flag, text);
  if (value < lo || value > hi)
    throw UsageError(str(flag), str(text), "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return value;
}

double parse_number(std::string_view flag, std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
    throw UsageError(str(flag), str(text), "expected a number");
  return value;
}

void require_positive(std::string_view flag, std::string_view text, double value) {
  if (!(value > 0)) throw UsageError(str(flag), str(text), "must be greater than 0");
}

void require_in_range(std::string_view flag, std::string_view text, double value, double lo, double hi) {
  if (value < lo || value > hi)
    throw UsageError(str(flag), str(text),
                     "must be between " + format_general(lo, 15) + " and " + format_general(hi, 15));
}

std::string format_size(std::uint64_t bytes) {
  static constexpr const char* kSuffix[] = {"", "K", "M", "G", "T"};
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (unit < 4 && value >= 1024.0) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return std::to_string(bytes);
  // Exact multiples print without decimals; others keep two, trailing zeros cut.
  if (value == std::floor(value)) return format_number(value, 0) + kSuffix[unit];
  std::string text = format_number(value, 2);
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text + kSuffix[unit];
}

std::string format_number(double value, int digits) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string format_general(double value, int significant) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, value);
  return buf;
}

std::string format_significant(double value, int significant) {
  if (!std::isfinite(value) || value == 0) return format_number(value, 0);
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  // Rounding can carry into the next decade (0.09996 -> 0.100): one decimal fewer then.
  int decimals = std::max(0, significant - 1 - magnitude);
  if (decimals > 0 && std::fabs(std::stod(format_number(value, decimals))) >= std::pow(10.0, magnitude + 1)) --decimals;
  return format_number(value, decimals);
}

std::string format_percent(double fraction, int digits) { return format_number(100 * fraction, digits) + "%"; }

std::string format_gib(double bytes, int digits) {
  return format_number(bytes / static_cast<double>(std::int64_t{1} << 30), digits) + " GiB";
}

}  // namespace redline
