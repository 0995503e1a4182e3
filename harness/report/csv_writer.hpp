// CSV report: one row per measured case, RFC 4180 quoting. Columns:
// run_id, timestamp_utc, host, gpu, tool, case_key, repetition, <params>, <metrics>,
// status, note (results/SCHEMA.md).
#pragma once

#include <string>
#include <string_view>

#include "harness/report/report.hpp"

namespace redline {

std::string to_csv(const Report& report);

// Quotes a field when it holds a comma, quote, CR or LF (RFC 4180).
std::string csv_field(std::string_view value);

}  // namespace redline
