// Google Benchmark's own reports of a redline tool's run, beside the tool's
// table, CSV and JSON: its console or JSON report on stdout
// (--benchmark_format) and the --benchmark_out file, which is written
// atomically once the run has finished, so an interrupted run never leaves
// half a document.
#pragma once

#include <benchmark/benchmark.h>

#include <iosfwd>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "harness/report/gbench_args.hpp"

namespace redline {

class GoogleBenchmarkReports {
 public:
  // `display` receives the --benchmark_format report (std::cout in a tool).
  GoogleBenchmarkReports(const BenchmarkArgs& args, std::ostream& display);
  // The --benchmark_out reporter writes into this object: it stays put.
  GoogleBenchmarkReports(const GoogleBenchmarkReports&) = delete;
  GoogleBenchmarkReports& operator=(const GoogleBenchmarkReports&) = delete;

  // True when --benchmark_format puts Google Benchmark's report on the
  // display: the tool's console table must then step aside.
  bool owns_display() const { return display_ != nullptr; }
  // The reporters a RowCollector forwards to (none, one or two).
  std::vector<benchmark::BenchmarkReporter*> reporters() const;
  // After the collector's finish(): writes --benchmark_out, when given,
  // atomically. Throws std::runtime_error naming the file when that fails.
  void write_out_file() const;

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> display_, out_file_;
  std::ostringstream out_text_;
  std::string out_path_;
};

}  // namespace redline
