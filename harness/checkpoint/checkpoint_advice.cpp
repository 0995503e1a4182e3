// How often to checkpoint: the Young/Daly rows and summary lines from the
// measured save, async stall and restore.
#include <algorithm>

#include "harness/checkpoint/checkpoint_model.hpp"
#include "harness/measure/young_daly.hpp"
#include "harness/checkpoint/checkpoint_stages.hpp"
#include "harness/core/units.hpp"

namespace redline {

void add_checkpoint_advice(const CheckpointConfig& cfg, double mtbf_s, const std::string& mtbf_source,
                           std::optional<double> sync_save_s, std::optional<AsyncResults> async,
                           std::optional<double> restore_s, Report& report) {
  const double restore = restore_s.value_or(0);
  // The source says where M came from: the default, --mtbf or --gpu-mtbf / --gpus.
  if (sync_save_s || async)
    report.summary.push_back({"mtbf", format_number(mtbf_s / 3600, 2) + " h: " + mtbf_source});
  auto add = [&](const std::string& stage, double cost, double longest, const CheckpointAdvice& a,
                 const std::string& note) {
    Row row = checkpoint_params_row(stage, cfg.bytes, cfg.threads, cfg.chunk, cfg.fsync);
    row.metric("cost_s", cost).metric("mtbf_h", mtbf_s / 3600).metric("interval_s", a.interval_s);
    row.metric("overhead_pct", a.overhead_pct).metric("lost_work_s", a.lost_work_s);
    row.note = note + "; MTBF " + mtbf_source + (restore_s ? "" : "; restore time not measured (0)");
    const std::string caveat = young_daly_caveat(a, longest, mtbf_s);
    if (!caveat.empty()) row.note += "; " + caveat;
    // The async save's promise: its stall a small share of the synchronous one.
    if (stage == "advice_async" && sync_save_s && *sync_save_s > 0) {
      const double share = 100.0 * cost / *sync_save_s;
      row.metric("stall_vs_sync_pct", share);
      report.summary.push_back({"async stall vs sync", format_number(share, 1) + "% of the synchronous stall"});
    }
    report.rows.push_back(row);
    report.summary.push_back({stage == "advice_sync" ? "checkpoint every (sync)" : "checkpoint every (async)",
                              format_number(a.interval_s / 60, 1) + " min, overhead " +
                                  format_number(a.overhead_pct, 2) + "%, lost per failure " +
                                  format_number(a.lost_work_s / 60, 1) + " min" +
                                  (caveat.empty() ? "" : " (" + caveat + ")")});
  };
  if (sync_save_s)
    add("advice_sync", *sync_save_s, *sync_save_s, young_daly_advice(*sync_save_s, mtbf_s, restore),
        "Young/Daly: sqrt(2 C MTBF), C = the synchronous save");
  if (async)
    add("advice_async", async->snapshot_s, std::max(async->snapshot_s, async->persist_s),
        young_daly_async_advice(async->snapshot_s, async->persist_s, mtbf_s, restore),
        "Young/Daly with C = the snapshot stall, interval >= persist time");
}

}  // namespace redline
