#include "kernels/runner/case_runner_columns.hpp"

namespace redline {

ColumnsDeclaration case_runner_columns() {
  return {
    .metrics = {
      {.name = "time_us", .unit = "us", .better = Better::lower,
       .meaning = "median time of one operation (CUDA events around back-to-back calls, per call)"},
      {.name = "time_max_us", .unit = "us", .better = Better::lower,
       .meaning = "slowest timed sample, per operation"},
      {.name = "time_cv", .unit = "ratio", .better = Better::lower,
       .meaning = "stddev / mean of the timed samples (each per operation)"},
      {.name = "datasheet_pct", .unit = "%", .better = Better::higher,
       .meaning = "the measured rate as a share of the datasheet's dense peak for the dtype (or HBM GB/s, FP32 "
                 "FMA) of the GPU in the table or `--gpu` / `--datasheet-tflops`"},
      {.name = "samples", .unit = "count", .better = Better::higher,
       .meaning = "timed samples behind the median (each sample: events around enough back-to-back GEMMs for "
                 "about 2 ms)"},
      {.name = "sm_clock_mhz_before", .unit = "MHz", .better = Better::higher,
       .meaning = "NVML SM clock just before the timed samples"},
      {.name = "sm_clock_mhz_after", .unit = "MHz", .better = Better::higher,
       .meaning = "NVML SM clock just after them"},
      {.name = "sm_clock_mhz_min", .unit = "MHz", .better = Better::higher,
       .meaning = "the lowest NVML SM clock read between the timed samples"},
      {.name = "time_min_us", .unit = "us", .better = Better::lower,
       .meaning = "the fastest timed sample, per operation"},
      {.name = "temperature_c_before", .unit = "°C", .better = Better::lower,
       .meaning = "NVML GPU temperature just before the timed samples"},
      {.name = "power_w_before", .unit = "W", .better = Better::lower,
       .meaning = "NVML board power just before the timed samples"},
      {.name = "throttled_before", .unit = "0/1", .better = Better::lower,
       .meaning = "1 when NVML reported a slowdown reason just before the timed samples (right after the "
                 "reference check, so it does not mark the row `throttled`)"},
      {.name = "temperature_c_after", .unit = "°C", .better = Better::lower,
       .meaning = "NVML GPU temperature after the timed samples"},
      {.name = "power_w_after", .unit = "W", .better = Better::lower,
       .meaning = "NVML board power after the timed samples"},
      {.name = "throttled", .unit = "0/1", .better = Better::lower,
       .meaning = "1 when NVML reported a slowdown reason (power cap, thermal, hardware slowdown, power brake) "
                 "while the timed samples ran or right after them (not before: the reference check runs "
                 "then); the note names it (empty: no NVML)"}
    }};
}

}  // namespace redline
