#include "harness/core/axis.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline {
namespace {

constexpr std::size_t kMaxAxisPoints = 100000;
// 2^50: far beyond any batch or byte count, and small enough that no step
// or product of the axis arithmetic can overflow.
constexpr std::int64_t kMaxAxisValue = std::int64_t{1} << 50;

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t begin = 0;
  for (;;) {
    const auto end = text.find(sep, begin);
    parts.push_back(text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
    if (end == std::string_view::npos) return parts;
    begin = end + 1;
  }
}

std::int64_t parse_value(std::string_view flag, std::string_view text, AxisUnit unit) {
  const std::uint64_t value = unit == AxisUnit::bytes ? parse_size(flag, text)
                                                      : static_cast<std::uint64_t>(parse_count(flag, text));
  if (value > static_cast<std::uint64_t>(kMaxAxisValue))
    throw UsageError(std::string(flag), std::string(text), "is too large (the limit is 2^50)");
  return static_cast<std::int64_t>(value);
}

// One value of the axis `whole`: a refusal names the whole axis and the
// item ("--batch-sizes '1:8:-1': item '-1' ..."), so ":8" is not read as an
// empty flag.
std::int64_t parse_item(std::string_view flag, std::string_view whole, std::string_view item, AxisUnit unit) {
  if (item == whole) return parse_value(flag, item, unit);
  if (item.empty())
    throw UsageError(std::string(flag), std::string(whole),
                     "has an empty item; use a list 1,2,4 or a range 8:64, 8:64:8 or 1:1024:x2");
  try {
    return parse_value(flag, item, unit);
  } catch (const UsageError& e) {
    throw UsageError(std::string(flag), std::string(whole), "item '" + std::string(item) + "': " + e.problem());
  }
}

}  // namespace

std::vector<std::int64_t> geometric_axis(std::int64_t start, std::int64_t stop, double factor) {
  std::vector<std::int64_t> values;
  for (std::int64_t v = start; v <= stop && values.size() < kMaxAxisPoints;) {
    values.push_back(v);
    // A product that is whole but for rounding error (50 x 1.1 comes out as
    // 55.00000000000001) is that whole number, not the next one up.
    const double product = static_cast<double>(v) * factor;
    auto next = static_cast<std::int64_t>(std::ceil(product));
    if (static_cast<double>(next - 1) >= product * (1 - 4 * std::numeric_limits<double>::epsilon())) --next;
    v = std::max(next, v + 1);
  }
  return values;
}

std::vector<std::int64_t> parse_axis(std::string_view flag, std::string_view text, AxisUnit unit) {
  const std::string f(flag), t(text);
  if (text.empty()) throw UsageError(f, t, "empty axis; use a list 1,2,4 or a range 8:64, 8:64:8 or 1:1024:x2");
  std::vector<std::int64_t> values;

  if (text.find(':') == std::string_view::npos) {
    for (auto part : split(text, ',')) values.push_back(parse_item(flag, text, part, unit));
  } else {
    auto parts = split(text, ':');
    // start:stop is every whole value between them, as a step of 1.
    if (parts.size() == 2) parts.push_back("1");
    if (parts.size() != 3)
      throw UsageError(f, t, "a range is start:stop, start:stop:step or start:stop:xFACTOR");
    const auto start = parse_item(flag, text, parts[0], unit);
    const auto stop = parse_item(flag, text, parts[1], unit);
    if (stop < start) throw UsageError(f, t, "the range's stop is below its start");
    if (!parts[2].empty() && (parts[2][0] == 'x' || parts[2][0] == '*')) {
      const double factor = parse_number(flag, parts[2].substr(1));
      if (!(factor > 1.0)) throw UsageError(f, t, "a geometric factor must be greater than 1");
      if (start < 1) throw UsageError(f, t, "a geometric range must start at 1 or more");
      values = geometric_axis(start, stop, factor);
      if (values.back() * factor <= static_cast<double>(stop) && values.size() >= kMaxAxisPoints)
        throw UsageError(f, t, "the range has too many points");
    } else {
      const auto step = parse_item(flag, text, parts[2], unit);
      if (step < 1) throw UsageError(f, t, "a linear step must be at least 1");
      if ((stop - start) / step >= static_cast<std::int64_t>(kMaxAxisPoints))
        throw UsageError(f, t, "the range has too many points");
      for (auto v = start; v <= stop; v += step) values.push_back(v);
    }
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

std::vector<std::int64_t> parse_count_axis_between(std::string_view flag, std::string_view text, std::int64_t lo,
                                                   std::int64_t hi) {
  auto values = parse_axis(flag, text, AxisUnit::count);  // ascending
  if (values.front() < lo || values.back() > hi)
    throw UsageError(std::string(flag), std::string(text),
                     "every value must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return values;
}

}  // namespace redline
