#include "harness/report/recorded_summary.hpp"

#include <fstream>

namespace redline {

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
    std::string value = line.substr(b + 4);
    value = value.substr(0, value.rfind('"'));
    std::string unescaped;
    for (std::size_t i = 0; i < value.size(); ++i) unescaped += (value[i] == '\\' && i + 1 < value.size()) ? value[++i] : value[i];
    members.emplace_back(line.substr(a + 1, b - a - 1), unescaped);
  }
  return members;
}

}  // namespace redline
