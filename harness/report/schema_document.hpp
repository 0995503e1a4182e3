// results/SCHEMA.md from the tools' declarations (harness/report/declaration.hpp):
// the metrics, parameters, charts and headlines tables filled into the
// document's prose (results/SCHEMA.md.in), and a tool's columns for --help.
// The tables are what Schema::parse reads back.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "harness/report/declaration.hpp"

namespace redline {

// What is wrong with the declarations, one line each (empty: nothing): a tool
// declared twice, a column declared twice by one tool, one metric with two
// units, directions or tracked flags, a chart or headline naming a column
// its tool does not declare.
std::vector<std::string> declaration_problems(const std::vector<ToolDeclaration>& tools);

// `document` with its placeholder lines ("@METRICS@", "@PARAMETERS@",
// "@CHARTS@", "@HEADLINES@") replaced by the tables. Throws
// std::invalid_argument naming a missing placeholder.
std::string schema_document(std::string_view document, const std::vector<ToolDeclaration>& tools);

// The tool's columns as --help prints them: each parameter and metric on a
// line with its unit, direction and the start of its meaning.
std::string columns_help(const ToolDeclaration& tool);

}  // namespace redline
