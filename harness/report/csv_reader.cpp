#include "harness/report/csv_reader.hpp"

#include <fstream>
#include <sstream>

namespace redline {

std::optional<std::size_t> CsvTable::column(std::string_view name) const {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  return std::nullopt;
}

const std::string& CsvTable::value(std::size_t r, std::string_view name) const {
  static const std::string empty;
  const auto c = column(name);
  return c ? rows.at(r).at(*c) : empty;
}

CsvTable parse_csv(std::string_view text, const std::string& source) {
  // A spreadsheet saving "CSV UTF-8" starts the file with a byte-order mark,
  // which would otherwise become part of the first column's name.
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  if (text.substr(0, kByteOrderMark.size()) == kByteOrderMark) text.remove_prefix(kByteOrderMark.size());
  CsvTable table;
  std::vector<std::string> record;
  std::string field;
  std::size_t line = 1, record_line = 1;
  bool in_quotes = false, field_was_quoted = false, any_in_record = false;

  auto end_field = [&] {
    record.push_back(std::move(field));
    field.clear();
    field_was_quoted = false;
  };
  auto end_record = [&] {
    end_field();
    if (table.header.empty()) {
      table.header = std::move(record);
    } else if (record.size() != table.header.size()) {
      throw CsvError(source, record_line,
                     "expected " + std::to_string(table.header.size()) + " fields, found " +
                         std::to_string(record.size()));
    } else {
      table.rows.push_back(std::move(record));
      table.row_lines.push_back(record_line);
    }
    record.clear();
    any_in_record = false;
  };

  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      if (!field.empty() || field_was_quoted)
        throw CsvError(source, line, "a quote inside an unquoted field");
      in_quotes = field_was_quoted = any_in_record = true;
    } else if (c == ',') {
      end_field();
      any_in_record = true;
    } else if (c == '\r' || c == '\n') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any_in_record || !field.empty()) end_record();
      ++line;
      record_line = line;
    } else {
      if (field_was_quoted) throw CsvError(source, line, "text after a closing quote");
      field += c;
      any_in_record = true;
    }
  }
  if (in_quotes) throw CsvError(source, record_line, "a quoted field is never closed");
  if (any_in_record || !field.empty()) end_record();
  if (table.header.empty()) throw CsvError(source, 1, "empty file: no header line");
  return table;
}

CsvTable read_csv(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CsvError(path.string(), 0, "cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_csv(text.str(), path.string());
}

}  // namespace redline
