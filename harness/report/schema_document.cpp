#include "harness/report/schema_document.hpp"

#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

namespace redline {
namespace {

std::string code(const std::string& name) { return "`" + name + "`"; }

std::string code_list(const std::vector<std::string>& names) {
  if (names.empty()) return "-";
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + code(name);
  return text;
}

// A table cell: a '|' inside it would split the row.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string row(const std::vector<std::string>& cells) {
  std::string line = "|";
  for (const auto& c : cells) {
    line += ' ';
    line += cell(c);
    line += " |";
  }
  line += '\n';
  return line;
}

std::string header(const std::vector<std::string>& titles) {
  std::string line = row(titles) + "|";
  for (std::size_t i = 0; i < titles.size(); ++i) line += "---|";
  return line + "\n";
}

std::string better_text(Better b) { return b == Better::higher ? "higher" : "lower"; }

std::string scale_text(AxisScale s) {
  return s == AxisScale::linear ? "linear" : s == AxisScale::log2 ? "log2" : "auto";
}

std::string from_text(HeadlineFrom f) {
  return f == HeadlineFrom::best ? "best" : f == HeadlineFrom::saturation ? "saturation" : "value";
}

// One row per metric and meaning: tools that declare a metric alike share
// its row, its tools cell naming each ("tool_a, tool_b (sweep)").
std::string metrics_table(const std::vector<ToolDeclaration>& tools) {
  using Key = std::tuple<std::string, std::string, bool, bool, std::string>;
  std::vector<Key> order;
  std::map<Key, std::string> tools_cell;
  for (const ToolDeclaration& tool : tools)
    for (const MetricDeclaration& m : tool.columns.metrics) {
      const Key key{m.name, m.unit, m.better == Better::higher, m.tracked, m.meaning};
      if (!tools_cell.count(key)) order.push_back(key);
      std::string& text = tools_cell[key];
      text += (text.empty() ? "" : ", ") + tool.tool + (m.where.empty() ? "" : " (" + m.where + ")");
    }
  std::string table = header({"metric", "unit", "better", "tracked", "tools", "meaning"});
  for (const Key& key : order) {
    const auto& [name, unit, higher, tracked, meaning] = key;
    table += row({code(name), unit, higher ? "higher" : "lower", tracked ? "yes" : "no", tools_cell[key], meaning});
  }
  return table;
}

std::string parameters_table(const std::vector<ToolDeclaration>& tools) {
  std::string table = header({"tool", "parameter", "meaning"});
  for (const ToolDeclaration& tool : tools)
    for (const ParameterDeclaration& p : tool.columns.parameters) table += row({code(tool.tool), code(p.name), p.meaning});
  std::string notes;
  for (const ToolDeclaration& tool : tools)
    for (const std::string& note : tool.columns.notes) notes += "- " + tool.tool + ": " + note + "\n";
  return notes.empty() ? table : table + "\n" + notes;
}

std::string labels_text(const std::vector<std::pair<std::string, std::string>>& labels) {
  if (labels.empty()) return "-";
  std::string text;
  for (const auto& [value, label] : labels) text += (text.empty() ? "" : ", ") + value + "=" + label;
  return text;
}

std::string charts_table(const std::vector<ToolDeclaration>& tools) {
  std::string table =
      header({"tool", "x", "x scale", "metric", "prediction", "series", "series labels", "not grouping", "saturation"});
  for (const ToolDeclaration& tool : tools)
    for (const ChartHints& c : tool.columns.chart)
      table += row({code(tool.tool), code_list(c.x), scale_text(c.x_scale), code_list(c.metric),
                    c.prediction.empty() ? "-" : code(c.prediction), c.series.empty() ? "-" : code(c.series),
                    labels_text(c.series_labels), code_list(c.not_grouping), c.saturation ? "yes" : "no"});
  return table;
}

std::string headlines_table(const std::vector<ToolDeclaration>& tools) {
  std::string table = header({"tool", "figure", "metric", "from", "rows"});
  for (const ToolDeclaration& tool : tools)
    for (const HeadlineSpec& h : tool.columns.headlines)
      table += row({code(tool.tool), h.figure, code_list(h.metric), from_text(h.from),
                    h.where_param.empty() ? "-" : code(h.where_param + "=" + h.where_value)});
  return table;
}

bool declares_metric(const ColumnsDeclaration& columns, const std::string& name) {
  for (const MetricDeclaration& m : columns.metrics)
    if (m.name == name) return true;
  return false;
}

bool declares_parameter(const ColumnsDeclaration& columns, const std::string& name) {
  for (const ParameterDeclaration& p : columns.parameters)
    if (p.name == name) return true;
  return false;
}

// Problems of one tool's own declaration: duplicates, and charts or
// headlines that name columns the tool does not declare.
void add_tool_problems(const ToolDeclaration& tool, std::vector<std::string>& problems) {
  std::set<std::string> seen;
  for (const MetricDeclaration& m : tool.columns.metrics)
    if (!seen.insert("metric " + m.name).second) problems.push_back(tool.tool + " declares metric " + m.name + " twice");
  for (const ParameterDeclaration& p : tool.columns.parameters)
    if (!seen.insert("parameter " + p.name).second)
      problems.push_back(tool.tool + " declares parameter " + p.name + " twice");
  const auto need_metric = [&](const std::string& name, const std::string& where) {
    if (!declares_metric(tool.columns, name)) problems.push_back(tool.tool + "'s " + where + " names undeclared metric " + name);
  };
  const auto need_parameter = [&](const std::string& name, const std::string& where) {
    if (!name.empty() && !declares_parameter(tool.columns, name))
      problems.push_back(tool.tool + "'s " + where + " names undeclared parameter " + name);
  };
  if (tool.columns.chart.size() > 1) problems.push_back(tool.tool + " declares " + std::to_string(tool.columns.chart.size()) + " charts");
  for (const ChartHints& c : tool.columns.chart) {
    for (const auto& x : c.x) need_parameter(x, "chart x");
    for (const auto& m : c.metric) need_metric(m, "chart");
    if (!c.prediction.empty()) need_metric(c.prediction, "chart prediction");
    need_parameter(c.series, "chart series");
    for (const auto& p : c.not_grouping) need_parameter(p, "chart's not grouping");
  }
  for (const HeadlineSpec& h : tool.columns.headlines) {
    for (const auto& m : h.metric) need_metric(m, "headline " + h.figure);
    need_parameter(h.where_param, "headline " + h.figure);
    if (h.from != HeadlineFrom::value && tool.columns.chart.empty())
      problems.push_back(tool.tool + "'s headline " + h.figure + " needs a swept parameter: the tool has no chart");
  }
}

// The placeholder line `name` in `document` replaced by `table`.
void fill(std::string& document, const std::string& name, const std::string& table) {
  const std::string line = "@" + name + "@\n";
  const auto at = document.find(line);
  if (at == std::string::npos) throw std::invalid_argument("the schema's document has no " + name + " placeholder line");
  document.replace(at, line.size(), table);
}

std::string shortened(const std::string& text, std::size_t limit) {
  if (text.size() <= limit) return text;
  const auto cut = text.rfind(' ', limit);
  return text.substr(0, cut == std::string::npos ? limit : cut) + " ...";
}

}  // namespace

std::vector<std::string> declaration_problems(const std::vector<ToolDeclaration>& tools) {
  std::vector<std::string> problems;
  std::map<std::string, std::pair<std::string, const MetricDeclaration*>> first;  // metric -> (tool, declaration)
  std::set<std::string> names;
  for (const ToolDeclaration& tool : tools) {
    if (!names.insert(tool.tool).second) problems.push_back("tool " + tool.tool + " is declared twice");
    add_tool_problems(tool, problems);
    for (const MetricDeclaration& m : tool.columns.metrics) {
      const auto [it, added] = first.emplace(m.name, std::make_pair(tool.tool, &m));
      if (added) continue;
      const MetricDeclaration& other = *it->second.second;
      if (other.unit != m.unit || other.better != m.better || other.tracked != m.tracked)
        problems.push_back("metric " + m.name + " is " + m.unit + ", " + better_text(m.better) + (m.tracked ? ", tracked" : "") +
                           " in " + tool.tool + " but " + other.unit + ", " + better_text(other.better) +
                           (other.tracked ? ", tracked" : "") + " in " + it->second.first);
    }
  }
  return problems;
}

std::string schema_document(std::string_view document, const std::vector<ToolDeclaration>& tools) {
  std::string text(document);
  fill(text, "METRICS", metrics_table(tools));
  fill(text, "PARAMETERS", parameters_table(tools));
  fill(text, "CHARTS", charts_table(tools));
  fill(text, "HEADLINES", headlines_table(tools));
  return text;
}

std::string columns_help(const ToolDeclaration& tool) {
  std::string text = "Columns of " + tool.tool + "'s rows (every one: results/SCHEMA.md):\n  parameters:\n";
  for (const ParameterDeclaration& p : tool.columns.parameters)
    text += "    " + p.name + ": " + shortened(p.meaning, 90) + "\n";
  text += "  metrics (unit, better):\n";
  for (const MetricDeclaration& m : tool.columns.metrics)
    text += "    " + m.name + " (" + m.unit + ", " + better_text(m.better) + (m.tracked ? ", tracked" : "") +
            (m.where.empty() ? "" : "; " + m.where) + "): " + shortened(m.meaning, 80) + "\n";
  return text;
}

}  // namespace redline
