#include "harness/report/row_status.hpp"

#include <array>
#include <utility>

namespace redline {
namespace {

constexpr std::array<std::pair<RowStatus, const char*>, 6> kNames = {{{RowStatus::ok, "ok"},
                                                                      {RowStatus::oom, "oom"},
                                                                      {RowStatus::error, "error"},
                                                                      {RowStatus::timeout, "timeout"},
                                                                      {RowStatus::skipped, "skipped"},
                                                                      {RowStatus::wrong, "wrong"}}};

}  // namespace

const char* status_name(RowStatus status) {
  for (const auto& [value, name] : kNames)
    if (value == status) return name;
  return "error";
}

std::string to_string(RowStatus status) { return status_name(status); }

std::optional<RowStatus> parse_row_status(std::string_view text) {
  for (const auto& [value, name] : kNames)
    if (text == name) return value;
  return std::nullopt;
}

}  // namespace redline
