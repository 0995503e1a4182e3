#include "kernels/runner/case_row.hpp"

#include <algorithm>

#include "harness/core/units.hpp"

namespace redline {
namespace {

std::string percent(double fraction) { return format_number(100 * fraction, 1) + "%"; }

double tflops_of(const CaseWork& work, double seconds) { return work.flop / seconds / 1e12; }
double gbps_of(const CaseWork& work, double seconds) { return work.bytes / seconds / 1e9; }

void add_before(CaseRow& row, const GpuReadings& before) {
  if (before.sm_clock_mhz) row.counter("sm_clock_mhz_before", *before.sm_clock_mhz);
  if (before.temperature_c) row.counter("temperature_c_before", *before.temperature_c);
  if (before.power_w) row.counter("power_w_before", *before.power_w);
  // Shown, not judged on: the reading before follows the set-up and the
  // reference check, whose own power cap would mark a point whose timed
  // window was not slowed.
  if (before.throttle_reasons)
    row.counter("throttled_before", (*before.throttle_reasons & kSlowdownReasonMask) != 0 ? 1 : 0);
}

void add_after(CaseRow& row, const GpuReadings& after) {
  if (after.sm_clock_mhz) row.counter("sm_clock_mhz_after", *after.sm_clock_mhz);
  if (after.temperature_c) row.counter("temperature_c_after", *after.temperature_c);
  if (after.power_w) row.counter("power_w_after", *after.power_w);
}

}  // namespace

void CaseRow::note(const std::string& text) {
  if (!text.empty()) notes_.push_back(text);
}

std::string CaseRow::note_text() const {
  std::string text;
  for (const auto& note : notes_) text += (text.empty() ? "" : "; ") + note;
  return text;
}

ClocksDuringSamples clocks_during_samples(const std::vector<std::optional<GpuReadings>>& per_sample,
                                          int warmup_samples) {
  ClocksDuringSamples during;
  for (std::size_t i = static_cast<std::size_t>(std::max(0, warmup_samples)); i < per_sample.size(); ++i) {
    if (!per_sample[i]) continue;
    if (const auto clock = per_sample[i]->sm_clock_mhz)
      during.min_sm_clock_mhz = std::min(during.min_sm_clock_mhz.value_or(*clock), *clock);
    if (const auto reasons = per_sample[i]->throttle_reasons) during.slowdown_reasons |= *reasons & kSlowdownReasonMask;
  }
  return during;
}

void add_rates(CaseRow& row, const CaseWork& work, double seconds) {
  if (work.flop > 0) row.counter("tflops", tflops_of(work, seconds));
  if (work.bytes > 0) row.counter(work.bandwidth_counter, gbps_of(work, seconds));
  if (!work.datasheet || !(work.datasheet->value > 0)) return;
  const bool of_tflops = work.datasheet->rate == DatasheetCeiling::Rate::tflops;
  if (of_tflops ? !(work.flop > 0) : !(work.bytes > 0)) return;  // no such rate to compare
  const double rate = of_tflops ? tflops_of(work, seconds) : gbps_of(work, seconds);
  row.counter("datasheet_pct", 100 * rate / work.datasheet->value);
}

void add_spread(CaseRow& row, const Measurement& m) {
  row.counter("time_cv", m.summary.cv);
  row.counter("time_min_us", m.summary.min * 1e6);
  row.counter("time_max_us", m.summary.max * 1e6);
  row.counter("samples", static_cast<double>(m.samples.size()));
}

void add_noise_note(CaseRow& row, const Measurement& m, const MeasurementPolicy& policy) {
  // With --target-cv 0, or a CV that met the target on the last sample, the
  // cap says nothing about noise.
  const bool capped = m.stop == StopReason::time_cap || m.stop == StopReason::repetition_cap;
  if (capped && policy.target_cv > 0 && m.summary.cv >= policy.target_cv)
    row.note("noisy: cv " + percent(m.summary.cv) + " at the " +
             (m.stop == StopReason::time_cap ? "time" : "repetition") + " cap");
}

void add_clock_readings(CaseRow& row, const ClockReadings& readings) {
  if (readings.before) add_before(row, *readings.before);
  if (readings.during.min_sm_clock_mhz) row.counter("sm_clock_mhz_min", *readings.during.min_sm_clock_mhz);
  if (readings.after) add_after(row, *readings.after);
  if (!readings.before && !readings.after && !readings.during.min_sm_clock_mhz) return;
  // The timed samples and right after them decide.
  std::uint64_t reasons = readings.during.slowdown_reasons;
  if (readings.after && readings.after->throttle_reasons) reasons |= *readings.after->throttle_reasons & kSlowdownReasonMask;
  row.counter("throttled", reasons != 0 ? 1 : 0);
  if (reasons != 0) row.note("throttled: " + slowdown_reason_names(reasons));
}

std::string rate_text(const CaseWork& work, double seconds) {
  if (work.flop > 0) return format_number(tflops_of(work, seconds), 1) + " TFLOPS";
  if (work.bytes > 0) return format_number(gbps_of(work, seconds), 0) + " GB/s";
  return format_number(seconds * 1e6, 1) + " us";
}

void add_failed_check_figures(std::vector<Row>& rows, const std::vector<FailedCheck>& failed) {
  std::vector<bool> used(failed.size(), false);
  for (Row& row : rows) {
    if (row.status != RowStatus::wrong) continue;
    for (std::size_t i = 0; i < failed.size(); ++i) {
      if (used[i] || failed[i].params != row.params) continue;
      used[i] = true;
      for (const auto& [name, value] : failed[i].figures) row.metric(name, value);
      break;
    }
  }
}

}  // namespace redline
