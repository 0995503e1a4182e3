// How much of a line or a name a std::regex may be given.
#pragma once

#include <cstddef>
#include <string_view>

namespace redline {

// libstdc++'s std::regex recurses once per character it matches, so a
// pattern such as ".*step" on a line of 50,000 characters (a program's
// progress bar, a long NVTX range name) overflows the stack and kills the
// process. Lines and names are matched on their first 4096 characters: far
// more than any step line or range name a user writes a pattern for.
constexpr std::size_t kMaxRegexTextChars = 4096;

inline std::string_view regex_safe_prefix(std::string_view text) { return text.substr(0, kMaxRegexTextChars); }

}  // namespace redline
