#include "harness/report/gbench_output.hpp"

#include <unistd.h>

#include <iostream>

#include "harness/core/atomic_file.hpp"

namespace redline {
namespace {

// Google Benchmark's own reporter for `format` (nullptr for none), writing to
// `out`. The console one takes --benchmark_color and
// --benchmark_counters_tabular on a terminal; a file gets neither colour nor,
// as Google Benchmark does it, its errors anywhere but the file.
std::unique_ptr<benchmark::BenchmarkReporter> google_reporter(const std::string& format, std::ostream& out,
                                                               const BenchmarkArgs& args, bool to_file) {
  std::unique_ptr<benchmark::BenchmarkReporter> reporter;
  if (format == "json") reporter = std::make_unique<benchmark::JSONReporter>();
  if (format == "console") {
    int options = args.tabular ? benchmark::ConsoleReporter::OO_Tabular : benchmark::ConsoleReporter::OO_None;
    const bool color = args.color == "auto" ? isatty(STDOUT_FILENO) != 0 : args.color == "true" || args.color == "yes";
    if (color && !to_file) options |= benchmark::ConsoleReporter::OO_Color;
    reporter = std::make_unique<benchmark::ConsoleReporter>(
        static_cast<benchmark::ConsoleReporter::OutputOptions>(options));
  }
  if (reporter) {
    reporter->SetOutputStream(&out);
    reporter->SetErrorStream(to_file ? &out : &std::cerr);
  }
  return reporter;
}

}  // namespace

GoogleBenchmarkReports::GoogleBenchmarkReports(const BenchmarkArgs& args, std::ostream& display)
    : display_(google_reporter(args.format, display, args, false)) {
  if (args.out.empty()) return;
  out_file_ = google_reporter(args.out_format, out_text_, args, true);
  out_path_ = args.out;
}

std::vector<benchmark::BenchmarkReporter*> GoogleBenchmarkReports::reporters() const {
  std::vector<benchmark::BenchmarkReporter*> reporters;
  if (display_) reporters.push_back(display_.get());
  if (out_file_) reporters.push_back(out_file_.get());
  return reporters;
}

void GoogleBenchmarkReports::write_out_file() const {
  if (!out_path_.empty()) write_file_atomically(out_path_, out_text_.str());
}

}  // namespace redline
