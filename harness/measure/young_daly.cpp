#include "harness/measure/young_daly.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace redline {

CheckpointAdvice young_daly_advice(double cost_s, double mtbf_s, double restore_s) {
  CheckpointAdvice a;
  a.interval_s = std::sqrt(2.0 * cost_s * mtbf_s);
  a.lost_work_s = a.interval_s / 2.0 + restore_s;
  // The stall per interval plus the time lost per failure: one definition
  // for both saves, so the two overheads compare.
  a.overhead_pct = a.interval_s > 0 ? 100.0 * (cost_s / a.interval_s + a.lost_work_s / mtbf_s) : 0.0;
  return a;
}

CheckpointAdvice young_daly_async_advice(double snapshot_s, double persist_s, double mtbf_s, double restore_s) {
  CheckpointAdvice a;
  a.interval_s = std::max(std::sqrt(2.0 * snapshot_s * mtbf_s), persist_s);
  // A failure loses the work since the last durable checkpoint: half an
  // interval on average, plus the persist that had not finished.
  a.lost_work_s = a.interval_s / 2.0 + persist_s + restore_s;
  a.overhead_pct = a.interval_s > 0 ? 100.0 * (snapshot_s / a.interval_s + a.lost_work_s / mtbf_s) : 0.0;
  return a;
}

std::string young_daly_caveat(const CheckpointAdvice& advice, double longest_s, double mtbf_s) {
  char text[200];
  if (advice.overhead_pct >= 100) {
    std::snprintf(text, sizeof text, "no progress: the overhead is %.0f%%, so failures and checkpoints take all the time",
                  advice.overhead_pct);
    return text;
  }
  // A tenth: the first-order terms' neglected ones are then about a tenth of theirs.
  if (mtbf_s > 0 && longest_s > mtbf_s / 10) {
    std::snprintf(text, sizeof text,
                  "outside the model: the checkpoint takes %.0f%% of the MTBF, where Young/Daly's first order "
                  "assumes far less; the interval is a rough guide",
                  100 * longest_s / mtbf_s);
    return text;
  }
  return "";
}

}  // namespace redline
