// A GPU case's row as the case runner fills it after timing: the rates over
// the median time, the percentage of the datasheet ceiling the case names,
// the spread of the samples, NVML's clocks before, during and after with the
// throttle flag, and the notes. Pure C++ (no CUDA), so it is tested on
// machines without a GPU.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/environment.hpp"
#include "harness/measure/measurement.hpp"
#include "harness/report/report.hpp"

namespace redline {

// The dense datasheet figure a case's rate is a percentage of (the row's
// datasheet_pct). The case names it: the runner knows no GPU table.
struct DatasheetCeiling {
  enum class Rate { tflops, bandwidth };
  Rate rate = Rate::tflops;
  double value = 0;  // TFLOPS or GB/s; not above 0: unknown, no percentage
};

// What one enqueue of a case does. The runner reports each count that is
// above 0 as a rate over the median time.
struct CaseWork {
  double flop = 0;  // the row's `tflops`
  // Bytes one enqueue moves through memory, where that is the figure (a
  // copy). 0 where it is not known: a GEMM's tiles re-read their operands,
  // so A + B + C is not what HBM moved.
  double bytes = 0;
  std::string bandwidth_counter = "hbm_GBps";  // the bytes' rate, its name saying which memory
  std::optional<DatasheetCeiling> datasheet;
};

// Counters (metrics, their names carrying their units) and notes of a row.
class CaseRow {
 public:
  void counter(const std::string& name, double value) { counters_[name] = value; }
  // Notes read in the order they were added; an empty one is dropped.
  void note(const std::string& text);

  const std::map<std::string, double>& counters() const { return counters_; }
  std::string note_text() const;  // the notes joined with "; "

 private:
  std::map<std::string, double> counters_;
  std::vector<std::string> notes_;
};

// NVML while the timed samples ran: a power cap or thermal slowdown that
// readings before and after, on an idle GPU, can miss.
struct ClocksDuringSamples {
  std::optional<unsigned> min_sm_clock_mhz;
  std::uint64_t slowdown_reasons = 0;  // masked with kSlowdownReasonMask
};

// From one slot per sample, warm-up samples first (nullopt where no reading
// was taken): the warm-up's readings are the clocks ramping up, not the run's.
ClocksDuringSamples clocks_during_samples(const std::vector<std::optional<GpuReadings>>& per_sample,
                                          int warmup_samples);

struct ClockReadings {
  std::optional<GpuReadings> before, after;
  ClocksDuringSamples during;
};

// tflops, the bandwidth counter and datasheet_pct from `work` over `seconds`.
void add_rates(CaseRow& row, const CaseWork& work, double seconds);
// time_cv, time_min_us, time_max_us, samples.
void add_spread(CaseRow& row, const Measurement& m);
// "noisy: cv 2.1% at the time cap" when a noise target was set and a cap
// ended the samples with the CV still above it.
void add_noise_note(CaseRow& row, const Measurement& m, const MeasurementPolicy& policy);
// The readings as counters, and `throttled` (with a note naming the reasons)
// when a slowdown was seen during or right after the samples. Without any
// reading (no NVML) nothing: unknown, not "not throttled".
void add_clock_readings(CaseRow& row, const ClockReadings& readings);

// Google Benchmark keeps no counters of a run that ended in an error, so the
// runner keeps the figures of each failed check (in the order the cases ran)
// and adds them to the rows once the batch is back: each `wrong` row takes
// the first unused figures of a case with its parameters.
struct FailedCheck {
  std::vector<std::pair<std::string, std::string>> params;
  std::map<std::string, double> figures;
};
void add_failed_check_figures(std::vector<Row>& rows, const std::vector<FailedCheck>& failed);

// The headline rate for a progress line: "812.3 TFLOPS" or "3012 GB/s".
std::string rate_text(const CaseWork& work, double seconds);

}  // namespace redline
