#include "harness/report/schema.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace redline {

namespace {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

// "| a | b \| c |" -> {"a", "b | c"}: the cells of one Markdown table row.
std::vector<std::string> table_cells(const std::string& line) {
  std::string text = trim(line);
  if (!text.empty() && text.front() == '|') text.erase(0, 1);
  if (!text.empty() && text.back() == '|' && !(text.size() >= 2 && text[text.size() - 2] == '\\')) text.pop_back();
  std::vector<std::string> cells;
  std::string cell;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (text[i] == '|') {
      cells.push_back(trim(cell));
      cell.clear();
    } else {
      cell += text[i];
    }
  }
  cells.push_back(trim(cell));
  return cells;
}

bool is_separator_row(const std::vector<std::string>& cells) {
  for (const auto& cell : cells) {
    if (cell.empty()) return false;
    for (char c : cell)
      if (c != '-' && c != ':') return false;
  }
  return true;
}

bool is_table_line(const std::string& line) { return trim(line).rfind('|', 0) == 0; }

// A column or parameter name; with `pattern`, a leading * is allowed.
bool is_name(const std::string& name, bool pattern) {
  const std::size_t start = pattern && !name.empty() && name.front() == '*' ? 1 : 0;
  if (name.size() <= start) return false;
  for (std::size_t i = start; i < name.size(); ++i) {
    const char c = name[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

std::string unquoted(const std::string& cell) {
  if (cell.size() >= 2 && cell.front() == '`' && cell.back() == '`') return cell.substr(1, cell.size() - 2);
  return cell;
}

[[noreturn]] void fail(const std::string& source, std::size_t line, const std::string& problem) {
  throw std::runtime_error(source + ":" + std::to_string(line) + ": " + problem);
}

// The first table of a "## Heading" section, before the next heading.
struct Table {
  std::string name;  // "metrics", "charts": for messages
  std::vector<std::string> header;
  std::size_t header_line = 0;
  std::vector<std::pair<std::size_t, std::vector<std::string>>> rows;  // (line number, cells)
  std::string source;

  bool has_column(const std::string& title) const {
    return std::find(header.begin(), header.end(), title) != header.end();
  }
  std::size_t column(const std::string& title) const {
    for (std::size_t c = 0; c < header.size(); ++c)
      if (header[c] == title) return c;
    fail(source, header_line, "the " + name + " table has no \"" + title + "\" column");
  }
};

// nullopt when the document has no such section.
// Its header must name every one of `columns`.
std::optional<Table> section_table(const std::vector<std::string>& lines, const std::string& heading,
                                   const std::string& name, const std::vector<std::string>& columns,
                                   const std::string& source) {
  std::size_t i = 0;
  while (i < lines.size() && trim(lines[i]) != heading) ++i;
  if (i == lines.size()) return std::nullopt;
  const std::size_t section_line = i + 1;
  for (++i; i < lines.size() && !is_table_line(lines[i]); ++i)
    if (trim(lines[i]).rfind('#', 0) == 0) break;
  if (i == lines.size() || !is_table_line(lines[i]))
    fail(source, section_line, "the \"" + heading + "\" section has no table");

  Table table{name, table_cells(lines[i]), i + 1, {}, source};
  for (const auto& column : columns) table.column(column);
  ++i;
  if (i == lines.size() || !is_separator_row(table_cells(lines[i])))
    fail(source, i + 1, "expected the table's |---| line under its header");
  for (++i; i < lines.size() && is_table_line(lines[i]); ++i) {
    auto cells = table_cells(lines[i]);
    if (cells.size() != table.header.size())
      fail(source, i + 1,
           "expected " + std::to_string(table.header.size()) + " cells, found " + std::to_string(cells.size()));
    table.rows.emplace_back(i + 1, std::move(cells));
  }
  if (table.rows.empty()) fail(source, table.header_line, "the " + name + " table has no rows");
  return table;
}

std::vector<std::string> tool_names(const std::string& cell);

MetricSpec parse_metric(const Table& table, std::size_t line, const std::vector<std::string>& cells) {
  const std::string& source = table.source;
  MetricSpec spec;
  const std::string& name_cell = cells[table.column("metric")];
  spec.name = unquoted(name_cell);
  if (!is_name(spec.name, true))
    fail(source, line, "metric \"" + name_cell + "\" is not a column name (or *suffix pattern)");
  spec.unit = cells[table.column("unit")];
  const std::string& better = cells[table.column("better")];
  if (better == "higher")
    spec.better = Better::higher;
  else if (better == "lower")
    spec.better = Better::lower;
  else
    fail(source, line, "better is \"" + better + "\" for " + spec.name + ", expected higher or lower");
  const std::string& tracked = cells[table.column("tracked")];
  if (tracked == "yes")
    spec.tracked = true;
  else if (tracked == "no")
    spec.tracked = false;
  else
    fail(source, line, "tracked is \"" + tracked + "\" for " + spec.name + ", expected yes or no");
  if (table.has_column("tools")) spec.tools = tool_names(cells[table.column("tools")]);
  return spec;
}

// "a, b (x, y), `c`" -> {"a", "b", "c"}: each comma-separated item's leading
// name, commas inside parentheses not splitting.
std::vector<std::string> tool_names(const std::string& cell) {
  std::vector<std::string> names;
  int depth = 0;
  std::string item;
  const auto take = [&] {
    const std::string text = unquoted(trim(item));
    std::size_t end = 0;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
    if (end > 0) names.push_back(text.substr(0, end));
    item.clear();
  };
  for (char c : cell) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == ',' && depth == 0)
      take();
    else
      item += c;
  }
  take();
  return names;
}

// "`a`, `b`" -> {"a", "b"}; "-" or an empty cell -> {}.
std::vector<std::string> cell_list(const std::string& cell) {
  std::vector<std::string> items;
  if (cell == "-") return items;
  std::istringstream in(cell);
  for (std::string item; std::getline(in, item, ',');)
    if (!trim(item).empty()) items.push_back(unquoted(trim(item)));
  return items;
}

// The cell's names, each checked; `column` names the column in messages.
std::vector<std::string> name_list(const Table& table, std::size_t line, const std::vector<std::string>& cells,
                                   const std::string& column, bool patterns) {
  std::vector<std::string> names = cell_list(cells[table.column(column)]);
  for (const auto& name : names)
    if (!is_name(name, patterns)) fail(table.source, line, column + " \"" + name + "\" is not a column name");
  return names;
}

std::string single_name(const Table& table, std::size_t line, const std::vector<std::string>& cells,
                        const std::string& column, bool patterns) {
  const auto names = name_list(table, line, cells, column, patterns);
  if (names.size() > 1)
    fail(table.source, line, column + " names " + std::to_string(names.size()) + " columns, expected one");
  return names.empty() ? "" : names.front();
}

AxisScale parse_scale(const Table& table, std::size_t line, const std::string& cell) {
  if (cell == "auto") return AxisScale::automatic;
  if (cell == "linear") return AxisScale::linear;
  if (cell == "log2") return AxisScale::log2;
  fail(table.source, line, "x scale is \"" + cell + "\", expected auto, linear or log2");
}

// "0=out-of-place, 1=in-place" -> {{"0", "out-of-place"}, {"1", "in-place"}}.
std::vector<std::pair<std::string, std::string>> parse_labels(const Table& table, std::size_t line,
                                                              const std::string& cell) {
  std::vector<std::pair<std::string, std::string>> labels;
  for (const auto& item : cell_list(cell)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      fail(table.source, line, "series label \"" + item + "\" is not VALUE=LABEL");
    labels.emplace_back(trim(item.substr(0, eq)), trim(item.substr(eq + 1)));
  }
  return labels;
}

const std::vector<std::string> kChartColumns = {"tool",       "x",      "x scale",       "metric",
                                                "prediction", "series", "series labels", "not grouping"};

ChartHints parse_chart_hints(const Table& table, std::size_t line, const std::vector<std::string>& cells) {
  ChartHints hints;
  hints.tool = single_name(table, line, cells, "tool", false);
  if (hints.tool.empty()) fail(table.source, line, "a charts row without a tool");
  hints.x = name_list(table, line, cells, "x", false);
  if (hints.x.empty()) fail(table.source, line, "no x parameter for " + hints.tool);
  hints.x_scale = parse_scale(table, line, cells[table.column("x scale")]);
  hints.metric = name_list(table, line, cells, "metric", true);
  if (hints.metric.empty()) fail(table.source, line, "no metric for " + hints.tool);
  hints.prediction = single_name(table, line, cells, "prediction", false);
  hints.series = single_name(table, line, cells, "series", false);
  hints.series_labels = parse_labels(table, line, cells[table.column("series labels")]);
  if (!hints.series_labels.empty() && hints.series.empty())
    fail(table.source, line, "series labels for " + hints.tool + " without a series parameter");
  hints.not_grouping = name_list(table, line, cells, "not grouping", false);
  if (table.has_column("saturation")) {  // optional: older documents lack it
    const std::string& saturation = cells[table.column("saturation")];
    if (saturation != "yes" && saturation != "no")
      fail(table.source, line, "saturation is \"" + saturation + "\" for " + hints.tool + ", expected yes or no");
    hints.saturation = saturation == "yes";
  }
  return hints;
}

const std::vector<std::string> kHeadlineColumns = {"tool", "figure", "metric", "from", "rows"};

HeadlineFrom parse_from(const Table& table, std::size_t line, const std::string& cell) {
  if (cell == "best") return HeadlineFrom::best;
  if (cell == "saturation") return HeadlineFrom::saturation;
  if (cell == "value") return HeadlineFrom::value;
  fail(table.source, line, "from is \"" + cell + "\", expected best, saturation or value");
}

HeadlineSpec parse_headline(const Table& table, std::size_t line, const std::vector<std::string>& cells,
                            const std::vector<ChartHints>& charts) {
  HeadlineSpec spec;
  spec.tool = single_name(table, line, cells, "tool", false);
  if (spec.tool.empty()) fail(table.source, line, "a headlines row without a tool");
  spec.figure = cells[table.column("figure")];
  if (spec.figure.empty() || spec.figure == "-") fail(table.source, line, "a headline of " + spec.tool + " without a figure");
  spec.metric = name_list(table, line, cells, "metric", true);
  if (spec.metric.empty()) fail(table.source, line, "no metric for " + spec.tool + "'s " + spec.figure);
  spec.from = parse_from(table, line, cells[table.column("from")]);
  const bool swept = spec.from != HeadlineFrom::value;
  if (swept && std::none_of(charts.begin(), charts.end(), [&](const ChartHints& h) { return h.tool == spec.tool; }))
    fail(table.source, line, spec.figure + " of " + spec.tool + " needs its swept parameter: the tool has no charts row");
  const std::string rows = unquoted(cells[table.column("rows")]);
  if (rows != "-" && !rows.empty()) {
    const auto eq = rows.find('=');
    if (eq == std::string::npos || !is_name(rows.substr(0, eq), false) || eq + 1 == rows.size())
      fail(table.source, line, "rows \"" + rows + "\" is not PARAMETER=VALUE");
    spec.where_param = rows.substr(0, eq);
    spec.where_value = rows.substr(eq + 1);
  }
  return spec;
}

// A metric on a second row (another tool's meaning) adds its tools to the
// first; its unit, direction and tracked flag must be the first's.
void add_metric(std::vector<MetricSpec>& metrics, MetricSpec spec, const std::string& source, std::size_t line) {
  for (auto& known : metrics) {
    if (known.name != spec.name) continue;
    if (known.unit != spec.unit || known.better != spec.better || known.tracked != spec.tracked)
      fail(source, line, "metric " + spec.name + " is listed again with another unit, direction or tracked flag");
    known.tools.insert(known.tools.end(), spec.tools.begin(), spec.tools.end());
    return;
  }
  metrics.push_back(std::move(spec));
}

}  // namespace

bool metric_matches(const std::string& name, const std::string& metric) {
  if (name.empty() || name.front() != '*') return name == metric;
  const std::string suffix = name.substr(1);
  return metric.size() > suffix.size() && metric.compare(metric.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Schema Schema::parse(std::string_view markdown, const std::string& source) {
  std::vector<std::string> lines;
  {
    std::istringstream in{std::string(markdown)};
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  Schema schema;
  const auto metrics = section_table(lines, "## Metrics", "metrics", {"metric", "unit", "better", "tracked"}, source);
  if (!metrics) fail(source, 1, "no \"## Metrics\" section");
  for (const auto& [line, cells] : metrics->rows) {
    MetricSpec spec = parse_metric(*metrics, line, cells);
    add_metric(schema.metrics_, std::move(spec), source, line);
  }
  if (const auto parameters =
          section_table(lines, "## Parameters", "parameters", {"tool", "parameter"}, source))
    for (const auto& [line, cells] : parameters->rows)
      schema.parameters_[single_name(*parameters, line, cells, "tool", false)].insert(
          single_name(*parameters, line, cells, "parameter", false));
  // Optional: without it every tool gets the generic chart.
  if (const auto charts = section_table(lines, "## Charts", "charts", kChartColumns, source))
    for (const auto& [line, cells] : charts->rows) {
      ChartHints hints = parse_chart_hints(*charts, line, cells);
      if (schema.chart_hints(hints.tool)) fail(source, line, "tool " + hints.tool + " has two charts rows");
      schema.charts_.push_back(std::move(hints));
    }
  // Optional: without it every tool's tracked metrics are its headlines.
  if (const auto headlines = section_table(lines, "## Headlines", "headlines", kHeadlineColumns, source))
    for (const auto& [line, cells] : headlines->rows)
      schema.headlines_.push_back(parse_headline(*headlines, line, cells, schema.charts_));
  return schema;
}

Schema Schema::load(const std::filesystem::path& schema_md) {
  std::ifstream in(schema_md, std::ios::binary);
  if (!in) throw std::runtime_error(schema_md.string() + ": cannot open the schema");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), schema_md.string());
}

const Schema& Schema::compiled_in() {
  static const Schema schema = parse(compiled_schema_markdown(), "results/SCHEMA.md (compiled in)");
  return schema;
}

std::optional<MetricSpec> Schema::find(const std::string& metric) const {
  for (const auto& spec : metrics_)
    if (spec.name == metric) return spec;
  for (const auto& spec : metrics_)
    if (!spec.name.empty() && spec.name.front() == '*' && metric_matches(spec.name, metric)) return spec;
  return std::nullopt;
}

std::vector<HeadlineSpec> Schema::headlines(const std::string& tool) const {
  std::vector<HeadlineSpec> out;
  for (const auto& spec : headlines_)
    if (spec.tool == tool) out.push_back(spec);
  return out;
}

const ChartHints* Schema::chart_hints(const std::string& tool) const {
  const auto it = std::find_if(charts_.begin(), charts_.end(), [&](const ChartHints& h) { return h.tool == tool; });
  return it == charts_.end() ? nullptr : &*it;
}

bool Schema::knows_tool(const std::string& tool) const {
  if (parameters_.count(tool)) return true;
  return std::any_of(metrics_.begin(), metrics_.end(), [&](const MetricSpec& m) {
    return std::find(m.tools.begin(), m.tools.end(), tool) != m.tools.end();
  });
}

bool Schema::declares(const std::string& tool, const std::string& column) const {
  if (const auto it = parameters_.find(tool); it != parameters_.end() && it->second.count(column)) return true;
  return std::any_of(metrics_.begin(), metrics_.end(), [&](const MetricSpec& m) {
    return metric_matches(m.name, column) && std::find(m.tools.begin(), m.tools.end(), tool) != m.tools.end();
  });
}

}  // namespace redline
