#include "harness/report/recorded_summary.hpp"

#include <fstream>

#include "harness/report/json_writer.hpp"

namespace redline {
namespace {

// A string member's value as our JsonWriter writes it on its own line
// ("key": "value"), escapes undone.
std::string string_value(const std::string& line, std::size_t value_start) {
  const std::string value = line.substr(value_start);
  return json_unquote_body(value.substr(0, value.rfind('"')));
}

}  // namespace

// Our own JsonWriter puts one member per line, so a line scan suffices.
std::vector<std::pair<std::string, std::string>> recorded_summary(const std::filesystem::path& json_file) {
  std::ifstream in(json_file);
  std::vector<std::pair<std::string, std::string>> members;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (!inside) {
      inside = line.find("\"summary\": {") != std::string::npos;
      if (inside && line.find("{}") != std::string::npos) break;  // an empty summary
      continue;
    }
    if (line.find('}') != std::string::npos && line.find("\": \"") == std::string::npos) break;
    const auto a = line.find('"'), b = line.find("\": \"");
    if (a == std::string::npos || b == std::string::npos) continue;
    members.emplace_back(json_unquote_body(line.substr(a + 1, b - a - 1)), string_value(line, b + 4));
  }
  return members;
}

std::string recorded_run_id(const std::filesystem::path& json_file) {
  std::ifstream in(json_file);
  static const std::string member = "\"run_id\": \"";
  for (std::string line; std::getline(in, line);)
    if (const auto at = line.find(member); at != std::string::npos) return string_value(line, at + member.size());
  return "";
}

}  // namespace redline
