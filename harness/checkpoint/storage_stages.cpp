// The storage stages as a table: each entry writes its rows, and one loop runs
// them in order, stopping after the stage under way at Ctrl-C.
#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "harness/checkpoint/checkpoint_stages.hpp"
#include "harness/core/atomic_file.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/units.hpp"
#include "harness/measure/measurement.hpp"
#include "harness/measure/stats.hpp"

namespace redline {
namespace fs = std::filesystem;

namespace {

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove(p, ec);
}

// A file of this process's own, removed when the stages end, and by the
// interrupt handler when a second signal ends the process first.
class ScratchFile {
 public:
  explicit ScratchFile(fs::path path) : path_(std::move(path)), on_forced_exit_(path_.c_str()) {}
  ~ScratchFile() { remove_quietly(path_); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  RemovedOnForcedExit on_forced_exit_;
};

double write_seconds(const WriteTimes& w) { return w.write_s + w.fsync_s; }

}  // namespace

// What the storage stages share while they run.
struct StorageRun {
  const CheckpointConfig& cfg;
  const std::byte* state;
  std::size_t bytes;
  const fs::path& scratch;
  Report& report;
  StorageResults results;

  WriteTimes write_scratch(const WriteOptions& options) const {
    return write_file(scratch, state, bytes, options);
  }
  WriteOptions one_writer(bool fsync, bool direct = false) const {
    return {.threads = 1, .chunk = cfg.chunk, .fsync = fsync, .direct = direct};
  }
  void add(Row row, const std::string& note = "") {
    if (!note.empty()) row.note = note;
    report.rows.push_back(std::move(row));
  }
};

namespace {

void run_raw_write(StorageRun& run) {
  // Best of two: the first write of a new file also pays block allocation
  // and first-touch costs that a steady-state ceiling should not include.
  // Both always run: the stage under way finishes at Ctrl-C, and its note
  // says two.
  MeasurementPolicy two_writes = fixed_count_policy(2);
  two_writes.stops_on_interrupt = false;
  const Measurement writes = measure(two_writes, [&] { return write_seconds(run.write_scratch(run.one_writer(true))); });
  run.add(checkpoint_stage_row("raw_write", run.cfg.bytes, 1, run.cfg.chunk, true, writes.summary.min),
          "sequential write + fsync by one writer, no safety steps (best of 2)");
}

void run_raw_read(StorageRun& run) {
  AlignedBuffer back(run.bytes);
  std::memset(back.data(), 0, run.bytes);  // fault the pages in before the timed read
  const ReadTimes r = read_file(run.scratch, back.data(), run.bytes, true, 1, run.cfg.chunk);
  run.add(checkpoint_stage_row("raw_read", run.cfg.bytes, 1, run.cfg.chunk, true, r.read_s),
          read_note(run.cfg.dir, r.direct));
}

void run_buffered_write(StorageRun& run) {
  const WriteTimes w = run.write_scratch(run.one_writer(false));
  run.add(checkpoint_stage_row("buffered_write", run.cfg.bytes, 1, run.cfg.chunk, false, w.write_s),
          "page cache only: not durable");
}

void run_write_fsync(StorageRun& run) {
  const WriteTimes w = run.write_scratch(run.one_writer(true));
  Row row = checkpoint_stage_row("write_fsync", run.cfg.bytes, 1, run.cfg.chunk, true, write_seconds(w));
  row.metric("fsync_s", w.fsync_s);
  run.add(row);
}

void run_odirect_write(StorageRun& run) {
  try {
    const WriteTimes w = run.write_scratch(run.one_writer(true, true));
    run.add(checkpoint_stage_row("odirect_write", run.cfg.bytes, 1, run.cfg.chunk, true, write_seconds(w)));
  } catch (const DirectIoUnsupported& e) {
    Row row = checkpoint_stage_row("odirect_write", run.cfg.bytes, 1, run.cfg.chunk, true, 0);
    row.metrics = {{"time_s", std::numeric_limits<double>::quiet_NaN()},
                   {"GBps", std::numeric_limits<double>::quiet_NaN()}};
    row.status = RowStatus::skipped;
    run.add(row, e.what());
  }
}

void run_writer_shapes(StorageRun& run) {
  const CheckpointConfig& cfg = run.cfg;
  // By the threads that run: shapes with more threads than chunks are one shape.
  std::set<std::pair<unsigned, std::size_t>> shapes;
  for (unsigned t : {1u, 4u, cfg.threads}) shapes.insert({io_threads(cfg.bytes, t, cfg.chunk), cfg.chunk});
  for (std::size_t c : {std::size_t{1} << 20, std::size_t{16} << 20, cfg.chunk})
    shapes.insert({io_threads(cfg.bytes, cfg.threads, c), c});
  for (const auto& [threads, chunk] : shapes) {
    if (interrupted()) return;
    const WriteTimes w = run.write_scratch({.threads = threads, .chunk = chunk, .fsync = true, .direct = false});
    run.add(checkpoint_stage_row("writers", cfg.bytes, threads, chunk, true, write_seconds(w)));
  }
}

// --- the save, in rounds paired with raw writes --------------------------------

struct SaveRounds {
  std::vector<double> raw_s, save_s;
  std::vector<SaveSteps> steps;
};

// The whole synchronous safe save, the stall training would see, in rounds
// alternating with a raw write + fsync of the same threads and chunk: a disk
// that slows as it fills, heats or throttles then slows both alike, and the
// save's share of the ceiling compares their medians.
SaveRounds measure_save_rounds(const StorageRun& run) {
  const CheckpointConfig& cfg = run.cfg;
  const WriteOptions save_options{.threads = cfg.threads, .chunk = cfg.chunk, .fsync = cfg.fsync, .direct = false};
  const WriteOptions paired_raw{.threads = cfg.threads, .chunk = cfg.chunk, .fsync = true, .direct = false};
  // Each raw write goes to a new file renamed over the last one, as the save
  // does: overwriting a file in place can reuse its blocks, while a new file
  // needs fresh ones, which on thin-provisioned or discard-mounted storage
  // (this project's VMs) costs several times more. Without this the gap would
  // be the filesystem's allocation, not the safety steps.
  const ScratchFile scratch_new(run.scratch.string() + ".new");
  SaveRounds rounds;
  auto raw_round = [&] {
    const WriteTimes raw_times = write_file(scratch_new.path(), run.state, run.bytes, paired_raw);
    fs::rename(scratch_new.path(), run.scratch);
    rounds.raw_s.push_back(write_seconds(raw_times));
  };
  // The previous checkpoint's data is freed after each save, outside its
  // stall (a trainer does it in the background), and costed on its own row.
  // A failed save cleans up its own second name for the previous data.
  auto save_round = [&] {
    rounds.steps.push_back(safe_save(cfg.dir, cfg.name, run.state, run.bytes, save_options, PreviousData::defer));
    rounds.save_s.push_back(rounds.steps.back().total_s);
    rounds.steps.back().release_previous_s = release_previous_checkpoint(cfg.dir, cfg.name);
  };
  // The order flips every round (raw, save | save, raw | ...): storage and
  // memory that alternate fast and slow writes (on this project's VMs, tmpfs
  // and the discard-mounted disk both do, in a period of two writes) would
  // otherwise give one of the pair every slow slot and bias the ratio.
  if (!cfg.may_replace_foreign) refuse_foreign_checkpoint(cfg.dir, cfg.name);
  // The rounds are the harness's samples: --rounds of them, never cut short
  // by noise or a time cap (the medians need them all); Ctrl-C ends them
  // between rounds, and the rounds so far make the medians.
  unsigned round = 0;
  measure(fixed_count_policy(static_cast<int>(std::max(1u, cfg.rounds))), [&] {
    if (round++ % 2 == 0) {
      raw_round();
      save_round();
    } else {
      save_round();
      raw_round();
    }
    return rounds.save_s.back();
  });
  remove_quietly(run.scratch);
  return rounds;
}

// The save's steps, from the median round so they add up to the save row.
void add_save_step_rows(StorageRun& run, const SaveSteps& s) {
  const CheckpointConfig& cfg = run.cfg;
  auto step = [&](const std::string& name, double seconds, const std::string& note) {
    Row row = checkpoint_stage_row("save." + name, cfg.bytes, cfg.threads, cfg.chunk, cfg.fsync, seconds);
    // Rename, directory fsync and manifest move no state bytes: a rate would mislead.
    if (name == "rename" || name == "fsync_dir" || name == "manifest")
      row.metrics[1].second = std::numeric_limits<double>::quiet_NaN();
    // A step not taken has no figures: an ok row of 0 GB/s would read as a collapse.
    if (name == "fsync_file" && !cfg.fsync) {
      row.metrics.clear();
      row.status = RowStatus::skipped;
    }
    run.add(row, note);
  };
  step("checksum", s.checksum_s,
       "XXH64 per chunk, stored in the manifest: hashed by each writer thread just before it writes the chunk, "
       "so this is inside save.write (the writers' mean hashing time), not added to the save");
  step("write", s.write_s, "to the temporary name");
  step("fsync_file", s.fsync_file_s, cfg.fsync ? "" : "not taken (--no-fsync)");
  step("manifest", s.manifest_s, "written and fsynced under a temporary name before the renames");
  step("rename", s.rename_s, "data, then manifest: temporary names -> final names, back to back");
  step("fsync_dir", s.fsync_dir_s, "makes both renames durable (kept with --no-fsync: it is the manifest's)");
}

// Its own median, over the rounds that had previous data to free (the first
// save into an empty directory has none).
void add_release_previous_row(StorageRun& run, const std::vector<SaveSteps>& rounds) {
  const CheckpointConfig& cfg = run.cfg;
  std::vector<double> releases;
  for (const auto& round : rounds)
    if (round.kept_previous) releases.push_back(round.release_previous_s);
  Row release = checkpoint_stage_row("release_previous", cfg.bytes, cfg.threads, cfg.chunk, cfg.fsync,
                                     releases.empty() ? 0 : releases[median_round(releases)]);
  release.metrics[1].second = std::numeric_limits<double>::quiet_NaN();
  if (releases.empty()) {
    release.metrics.clear();
    release.status = RowStatus::skipped;
    release.note = "no previous checkpoint to free (one save into an empty directory, or no hard links here)";
  } else {
    release.note = "the previous checkpoint's data freed after the stall, not in it (a trainer does this in the "
                   "background): a second name kept it alive through the rename; " + median_note(releases.size());
  }
  run.add(release);
}

void add_save_summary(StorageRun& run, double raw_median, double save_s, std::size_t rounds) {
  const CheckpointConfig& cfg = run.cfg;
  run.report.summary.push_back({"storage ceiling",
                                format_number(gbps(cfg.bytes, raw_median), 2) +
                                    " GB/s: raw write + fsync of a new file, " + std::to_string(cfg.threads) +
                                    (cfg.threads == 1 ? " writer x " : " writers x ") + format_size(cfg.chunk) +
                                    " (the save's), " + "median of " + std::to_string(rounds) +
                                    " rounds paired with the saves"});
  run.report.summary.push_back(
      {"synchronous save (stall)",
       format_number(save_s, 3) + " s, " + format_number(gbps(cfg.bytes, save_s), 2) + " GB/s" +
           (cfg.fsync ? ": " + format_number(raw_median / save_s * 100.0, 1) + "% of the ceiling"
                      : ": without fsync, not durable (no share of the ceiling)")});
}

// Storage whose write times swing this much (thin-provisioned or
// discard-mounted volumes, shared disks) makes the ratio a coin toss: say so
// rather than let it pass for the save's overhead.
void warn_if_noisy(StorageRun& run, const Summary& raw, const Summary& save, std::size_t rounds) {
  constexpr double kNoisyCv = 0.25;
  if (rounds < 2 || !(raw.cv > kNoisyCv || save.cv > kNoisyCv)) return;
  const std::string warning = "storage noisy: raw write CV " + format_number(100 * raw.cv, 0) + "%, save CV " +
                              format_number(100 * save.cv, 0) + "%; " +
                              (run.cfg.fsync ? "the share of the ceiling is not conclusive"
                                             : "the save's time is not conclusive") +
                              " (more --rounds, a quieter disk)";
  run.report.rows.back().note += "; " + warning;
  run.report.summary.push_back({"warning (storage)", warning});
}

void run_save_rounds(StorageRun& run) {
  const CheckpointConfig& cfg = run.cfg;
  const SaveRounds rounds = measure_save_rounds(run);
  if (rounds.steps.empty() || rounds.raw_s.empty()) return;  // interrupted before a whole pair
  const Summary raw_summary = summarize(rounds.raw_s), save_summary = summarize(rounds.save_s);
  const SaveSteps& s = rounds.steps[median_round(rounds.save_s)];
  const double raw_median = rounds.raw_s[median_round(rounds.raw_s)];
  run.results.save_s = s.total_s;

  Row paired = checkpoint_stage_row("raw_write_paired", cfg.bytes, cfg.threads, cfg.chunk, true, raw_median);
  paired.metric("time_cv", raw_summary.cv);
  run.add(paired, "raw write + fsync of a new file with the save's threads and chunk, " +
                      median_note(rounds.raw_s.size()) + ", paired with the saves");
  add_save_step_rows(run, s);
  add_release_previous_row(run, rounds.steps);
  Row save = checkpoint_stage_row("save", cfg.bytes, cfg.threads, cfg.chunk, cfg.fsync, s.total_s);
  // A save without fsync is not durable: against a durable ceiling its share
  // would read as several hundred percent and mean nothing.
  if (cfg.fsync) save.metric("ceiling_pct", raw_median / s.total_s * 100.0);
  save.metric("time_cv", save_summary.cv);
  run.add(save, std::string(cfg.fsync ? "synchronous safe save: the stall"
                                      : "synchronous save without fsync: NOT durable, so not compared with the "
                                        "ceiling") +
                    "; " + median_note(rounds.save_s.size()));
  add_save_summary(run, raw_median, s.total_s, rounds.raw_s.size());
  warn_if_noisy(run, raw_summary, save_summary, rounds.raw_s.size());
}

}  // namespace

const std::vector<StorageStage>& storage_stages() {
  static const std::vector<StorageStage> stages = {
      {"raw_write", "the storage's ceiling: one writer, large sequential writes, then fsync; no safety steps",
       run_raw_write},
      {"raw_read", "reading the file back from storage (O_DIRECT, or with its cached pages dropped)", run_raw_read},
      {"buffered_write", "write() into the page cache only: what an unsafe save would seem to cost",
       run_buffered_write},
      {"write_fsync", "one writer's write + fsync, and the fsync's share", run_write_fsync},
      {"odirect_write", "write + fsync bypassing the page cache (skipped where the filesystem refuses O_DIRECT)",
       run_odirect_write},
      {"writers", "write + fsync for each writer-thread count and chunk size around the save's", run_writer_shapes},
      {"save", "the synchronous safe save (the stall) and each safety step, in rounds paired with raw writes of "
               "the save's shape (raw_write_paired, save.*, release_previous)",
       run_save_rounds},
  };
  return stages;
}

std::string read_note(const fs::path& dir, bool direct) {
  // Linux 6.6 and later take O_DIRECT on tmpfs, which is memory all the same.
  if (const auto memory = memory_file_system(dir))
    return "--dir is on " + *memory + ", in memory: this read is memory bandwidth, not storage";
  return direct ? "O_DIRECT: read from storage, not the page cache"
                : "the filesystem refuses O_DIRECT: cached pages were dropped (fadvise) where possible, "
                  "but the read may be served from the page cache";
}

StorageResults run_storage_stages(const CheckpointConfig& cfg, const std::byte* state, Report& report) {
  if (const auto memory = memory_file_system(cfg.dir))
    report.summary.push_back({"storage", "--dir '" + cfg.dir.string() + "' is on " + *memory +
                                             ", in memory: every figure here is memory bandwidth, not storage's"});
  // Per process, so two runs sharing a directory never write one file.
  const ScratchFile scratch(cfg.dir / (".redline-checkpoint-scratch-" + host_and_pid() + ".bin"));
  StorageRun run{cfg, state, static_cast<std::size_t>(cfg.bytes), scratch.path(), report, {}};
  for (const StorageStage& stage : storage_stages()) {
    stage.run(run);
    // Ctrl-C (or SIGTERM) ends the stages after the one under way: the rows
    // so far are kept, and with no save round measured save_s stays 0.
    if (interrupted()) break;
  }
  return run.results;
}

}  // namespace redline
