// Every tool's declaration of its rows, under the tool's name: the one place
// that joins a tool to its rooms' declarations. The build turns them into
// results/SCHEMA.md and the schema the binaries carry (bench/schema_md.cpp);
// each tool's --help lists its own.
#pragma once

#include <vector>

#include "harness/report/declaration.hpp"

namespace redline {

std::vector<ToolDeclaration> tool_declarations();

// The declaration of `tool`; throws std::out_of_range for a tool declared nowhere.
const ToolDeclaration& tool_declaration(const std::string& tool);

}  // namespace redline
