#include "harness/report/csv_writer.hpp"

#include <algorithm>

namespace redline {
namespace {

template <typename Pairs>
auto find_value(const Pairs& pairs, const std::string& name) {
  return std::find_if(pairs.begin(), pairs.end(), [&](const auto& p) { return p.first == name; });
}

void append_line(std::string& out, const std::vector<std::string>& fields) {
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += csv_field(fields[i]);
  }
  out += "\r\n";  // RFC 4180 line break
}

}  // namespace

std::string csv_field(std::string_view value) {
  if (value.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(value);
  std::string quoted = "\"";
  for (char c : value) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

std::string to_csv(const Report& report) {
  const auto params = report.param_names();
  const auto metrics = report.metric_names();
  std::vector<std::string> header = {"run_id", "timestamp_utc", "host", "gpu", "tool", "case_key", "repetition"};
  header.insert(header.end(), params.begin(), params.end());
  header.insert(header.end(), metrics.begin(), metrics.end());
  header.push_back("status");
  header.push_back("note");

  std::string out;
  append_line(out, header);
  const std::string gpu = report.env.gpu_summary();
  for (const auto& row : report.rows) {
    std::vector<std::string> fields = {report.run_id, report.env.timestamp_utc, report.env.host,
                                       gpu,           report.tool,              row.case_key(),
                                       std::to_string(row.repetition)};
    for (const auto& name : params) {
      auto it = find_value(row.params, name);
      fields.push_back(it == row.params.end() ? "" : it->second);
    }
    for (const auto& name : metrics) {
      auto it = find_value(row.metrics, name);
      fields.push_back(it == row.metrics.end() ? "" : metric_text(it->second));
    }
    fields.push_back(to_string(row.status));
    fields.push_back(row.note);
    append_line(out, fields);
  }
  return out;
}

}  // namespace redline
