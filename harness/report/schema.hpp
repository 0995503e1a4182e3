// What results/SCHEMA.md says about each metric (its unit, whether higher or
// lower is better, whether nightly comparison tracks it), which columns each
// tool declares, and how each tool's rows are charted. Tools that judge or
// chart results (compare, history, report, the charts in a tool's JSON) read
// these from here, never from the user. The document is generated from the
// tools' declarations (harness/report/declaration.hpp) and compiled into the
// binaries (Schema::compiled_in), so a build folder carried to another
// machine keeps it.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/report/declaration.hpp"

namespace redline {

struct MetricSpec {
  std::string name;  // exact name, or a pattern "*_per_s" (a leading * matches any prefix)
  std::string unit;
  Better better = Better::higher;
  bool tracked = true;  // compared by default (false: informational, e.g. wall time with start-up)
  std::vector<std::string> tools;  // the tools that declare it
};

class Schema {
 public:
  // Parses the "## Metrics" table of SCHEMA.md (columns: metric | unit |
  // better | tracked | tools | meaning; a metric on several rows has one
  // unit, direction and tracked flag), when present the "## Parameters"
  // table (tool | parameter | meaning), the "## Charts"
  // table (columns: tool | x | x scale | metric | prediction | series |
  // series labels | not grouping) and the "## Headlines" table (columns:
  // tool | figure | metric | from | rows). Throws std::runtime_error naming
  // the file and line for a malformed row.
  static Schema load(const std::filesystem::path& schema_md);
  static Schema parse(std::string_view markdown, const std::string& source);
  // results/SCHEMA.md as it was when the binary was built.
  static const Schema& compiled_in();

  // Exact names first, then patterns; nullopt for a metric the schema lacks.
  std::optional<MetricSpec> find(const std::string& metric) const;
  const std::vector<MetricSpec>& metrics() const { return metrics_; }
  // The tool's row of the charts table; nullptr for a tool without one.
  const ChartHints* chart_hints(const std::string& tool) const;
  // The tool's rows of the headlines table, in order; empty for a tool without.
  std::vector<HeadlineSpec> headlines(const std::string& tool) const;
  // Whether the schema knows `tool` (declares any column for it), and whether
  // `tool` declares `column` as a parameter or metric (patterns match).
  bool knows_tool(const std::string& tool) const;
  bool declares(const std::string& tool, const std::string& column) const;

 private:
  std::vector<MetricSpec> metrics_;
  std::vector<ChartHints> charts_;
  std::vector<HeadlineSpec> headlines_;
  std::map<std::string, std::set<std::string>> parameters_;  // tool -> its parameters
};

// `name` is `metric`, or the pattern "*suffix" that `metric` ends with.
bool metric_matches(const std::string& name, const std::string& metric);

// results/SCHEMA.md's text as it was when the binary was built (generated
// into the build by embed_text.cmake).
std::string_view compiled_schema_markdown();

}  // namespace redline
