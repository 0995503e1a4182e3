// JSON report in Google Benchmark's format ("context" + "benchmarks"), so
// compare.py and github-action-benchmark read redline results unchanged.
// Each row becomes one benchmark named "<tool>/<k=v>/<k=v>"; the report's
// time metric (Report::time_metric: a time, or a rate as the time per item it
// implies), else the row's first metric named *time_ns|us|ms|s, becomes
// real_time/cpu_time with its unit, and every metric (as a counter),
// parameter and the status ride along as fields.
// Rows that are not ok carry error_occurred, as Google Benchmark's do.
// The environment and the run summary sit under context.redline.
#pragma once

#include <string>

#include "harness/report/report.hpp"

namespace redline {

std::string to_gbench_json(const Report& report);

// The environment alone as a JSON object (env.json of a run folder).
std::string environment_json(const Environment& env);

}  // namespace redline
