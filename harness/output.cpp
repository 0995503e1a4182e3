#include "harness/output.hpp"

#include <iostream>

#include "harness/atomic_file.hpp"
#include "harness/console_table.hpp"
#include "harness/csv_writer.hpp"
#include "harness/gbench_json.hpp"

namespace redline {

void write_reports(const Report& report, const OutputOptions& options) {
  if (!options.quiet) std::cout << to_console_table(report) << std::flush;
  if (!options.csv_path.empty()) write_file_atomically(options.csv_path, to_csv(report));
  if (!options.json_path.empty()) write_file_atomically(options.json_path, to_gbench_json(report));
}

}  // namespace redline
