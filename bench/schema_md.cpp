// Writes results/SCHEMA.md from the tools' declarations: the build runs it
// to compile the schema into the binaries, scripts/generate-schema to
// rewrite the committed file. Refuses declarations that contradict each
// other (exit 1, each problem on a line).
//   redline_schema_md TEMPLATE OUTPUT
#include <fstream>
#include <iostream>
#include <sstream>

#include "bench/tool_columns.hpp"
#include "harness/core/atomic_file.hpp"
#include "harness/report/schema_document.hpp"

int main(int argc, char** argv) {
  using namespace redline;
  if (argc != 3) {
    std::cerr << "usage: redline_schema_md TEMPLATE OUTPUT\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::cerr << "redline_schema_md: cannot read " << argv[1] << "\n";
    return 2;
  }
  std::ostringstream document;
  document << in.rdbuf();
  const std::vector<ToolDeclaration> tools = tool_declarations();
  const std::vector<std::string> problems = declaration_problems(tools);
  for (const std::string& problem : problems) std::cerr << "redline_schema_md: " << problem << "\n";
  if (!problems.empty()) return 1;
  try {
    write_file_atomically(argv[2], schema_document(document.str(), tools));
  } catch (const std::exception& e) {
    std::cerr << "redline_schema_md: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
