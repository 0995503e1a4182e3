// Reads an RFC 4180 CSV file (quoted fields, embedded commas, quotes and line
// breaks). Errors name the file and the line.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace redline {

class CsvError : public std::runtime_error {
 public:
  CsvError(const std::string& file, std::size_t line, const std::string& problem)
      : std::runtime_error(file + ":" + std::to_string(line) + ": " + problem), line_(line) {}
  std::size_t line() const { return line_; }

 private:
  std::size_t line_;
};

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> row_lines;  // line number where each row starts

  // Index of a column, or nullopt.
  std::optional<std::size_t> column(std::string_view name) const;
  // The value of `name` in row `r` ("" if the column is absent).
  const std::string& value(std::size_t r, std::string_view name) const;
};

// `source` names the input in error messages. Every row must have as many
// fields as the header.
CsvTable parse_csv(std::string_view text, const std::string& source);
CsvTable read_csv(const std::filesystem::path& path);

}  // namespace redline
