// A row's status: what every tool writes in its `status` column, and reads
// back from it. The text is the column's (results/SCHEMA.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace redline {

enum class RowStatus {
  ok,       // measured (and verified)
  oom,      // ran out of device or host memory
  error,    // failed otherwise
  timeout,  // did not finish in time
  skipped,  // could not run here or was not run, with the reason in the note
  wrong,    // ran, and its result failed the check
};

// "ok", "oom", "error", "timeout", "skipped", "wrong".
const char* status_name(RowStatus status);
std::string to_string(RowStatus status);

// The status a column's text names; nullopt for any other text.
std::optional<RowStatus> parse_row_status(std::string_view text);

}  // namespace redline
