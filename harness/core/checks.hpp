// Checks of sizes a model or a shape is built from, shared by every room: a
// failed one throws std::invalid_argument naming the field and its value.
// (A flag's value is checked by the units parsers and is a UsageError.)
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace redline {

// "heads = 0 is below 1".
inline void require_at_least_one(std::int64_t value, const char* field) {
  if (value < 1) throw std::invalid_argument(std::string(field) + " = " + std::to_string(value) + " is below 1");
}

// "kv_heads = 3 does not divide heads = 32".
inline void require_divides(std::int64_t part, const char* part_field, std::int64_t whole, const char* whole_field) {
  if (whole % part != 0)
    throw std::invalid_argument(std::string(part_field) + " = " + std::to_string(part) + " does not divide " +
                                whole_field + " = " + std::to_string(whole));
}

}  // namespace redline
