// The restore stage: read and verify the checkpoint in rounds, or a "wrong"
// row when it is refused.
#include <algorithm>

#include "harness/checkpoint/checkpoint_stages.hpp"
#include "harness/core/units.hpp"
#include "harness/measure/measurement.hpp"
#include "harness/measure/stats.hpp"

namespace redline {

namespace {

// The median round's rows (its steps add up to its total); returns that total.
double add_restore_rows(const CheckpointConfig& cfg, const std::vector<RestoreSteps>& rounds, Report& report) {
  std::vector<double> totals;
  for (const auto& round : rounds) totals.push_back(round.total_s);
  const RestoreSteps& r = rounds[median_round(totals)];
  Row read = checkpoint_stage_row("restore.read", r.bytes, cfg.threads, cfg.chunk, cfg.fsync, r.read_s);
  read.note = read_note(cfg.dir, r.direct);
  report.rows.push_back(read);
  Row verify = checkpoint_stage_row("restore.verify", r.bytes, cfg.threads, cfg.chunk, cfg.fsync, r.verify_s);
  verify.note = "XXH64 matches the manifest";
  report.rows.push_back(verify);
  Row total = checkpoint_stage_row("restore", r.bytes, cfg.threads, cfg.chunk, cfg.fsync, r.total_s);
  total.metric("time_cv", summarize(totals).cv);
  total.note = median_note(rounds.size());
  report.rows.push_back(total);
  report.summary.push_back({"restore (read + verify)", format_number(r.total_s, 3) + " s, " + median_note(rounds.size())});
  return r.total_s;
}

}  // namespace

std::optional<double> run_restore_stage(const CheckpointConfig& cfg, AlignedBuffer& into, Report& report) {
  try {
    // --rounds restores too, the harness's samples; the steps shown are the
    // median round's, so they add up to the restore row. A rejected
    // checkpoint stops at the first. Ctrl-C ends the rounds between rounds,
    // but the stage has begun, so its row gets at least one.
    std::vector<RestoreSteps> rounds;
    auto restore_round = [&] {
      rounds.push_back(restore_checkpoint(cfg.dir, cfg.name, into, cfg.threads, cfg.chunk));
      return rounds.back().total_s;
    };
    measure(fixed_count_policy(static_cast<int>(std::max(1u, cfg.rounds))), restore_round);
    if (rounds.empty()) restore_round();
    return add_restore_rows(cfg, rounds, report);
  } catch (const CheckpointRejected& e) {
    // The data file's size, as a good restore of it names: the refused case is the same case.
    std::error_code ec;
    const auto on_disk = std::filesystem::file_size(checkpoint_paths(cfg.dir, cfg.name).data, ec);
    Row row = checkpoint_params_row("restore", ec ? 0 : on_disk, cfg.threads, cfg.chunk, cfg.fsync);
    row.status = RowStatus::wrong;
    row.note = std::string("refused: ") + e.what();
    report.rows.push_back(row);
    report.summary.push_back({"restore", row.note});
    return std::nullopt;
  }
}

}  // namespace redline
