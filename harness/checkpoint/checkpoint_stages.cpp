#include "harness/checkpoint/checkpoint_stages.hpp"

#include "harness/core/clock.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <limits>
#include <set>
#include <thread>
#include <vector>

#include "harness/core/atomic_file.hpp"
#include "harness/checkpoint/checkpoint_model.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/measure/stats.hpp"
#include "harness/core/units.hpp"

namespace redline {
namespace fs = std::filesystem;

namespace {

double gbps(std::uint64_t bytes, double seconds) { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }

// The index of the median of `seconds` (the lower middle one for an even
// count): the round whose steps a stage shows. Every stage figure from
// rounds (raw, save, restore) is this round's, so a row's steps add up to
// it and the save and raw medians compared are of one kind.
std::size_t median_round(const std::vector<double>& seconds) {
  std::vector<std::size_t> order(seconds.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return seconds[a] < seconds[b]; });
  return order[(order.size() - 1) / 2];
}

std::string median_note(std::size_t rounds) {
  return "median of " + std::to_string(rounds) + " rounds" + (rounds % 2 == 0 ? " (the lower middle one)" : "");
}

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove(p, ec);
}

}  // namespace

Row checkpoint_stage_row(const std::string& stage, std::uint64_t bytes, unsigned threads, std::size_t chunk,
                         bool fsync, double seconds) {
  Row row;
  row.param("stage", stage)
      .param("bytes", std::to_string(bytes))
      .param("threads", std::to_string(threads))
      .param("chunk", format_size(chunk))
      .param("fsync", fsync ? "1" : "0");
  row.metric("time_s", seconds).metric("GBps", gbps(bytes, seconds));
  return row;
}

StorageResults run_storage_stages(const CheckpointConfig& cfg, const std::byte* state, Report& report) {
  StorageResults out;
  const auto bytes = static_cast<std::size_t>(cfg.bytes);
  // Per process, so two runs sharing a directory never write one file.
  const fs::path scratch = cfg.dir / (".redline-checkpoint-scratch-" + host_and_pid() + ".bin");
  struct Cleanup {
    fs::path p;
    RemovedOnForcedExit also_on_forced_exit{p.c_str()};
    ~Cleanup() { remove_quietly(p); }
  } cleanup{scratch};

  // Ceiling: one plain sequential writer with large writes, then fsync.
  WriteOptions raw{.threads = 1, .chunk = cfg.chunk, .fsync = true, .direct = false};
  // Best of two: the first write of a new file also pays block allocation
  // and first-touch costs that a steady-state ceiling should not include.
  WriteTimes w = write_file(scratch, state, bytes, raw);
  double raw_best = w.write_s + w.fsync_s;
  w = write_file(scratch, state, bytes, raw);
  raw_best = std::min(raw_best, w.write_s + w.fsync_s);
  Row sequential = checkpoint_stage_row("raw_write", cfg.bytes, 1, cfg.chunk, true, raw_best);
  sequential.note = "sequential write + fsync by one writer, no safety steps (best of 2)";
  report.rows.push_back(sequential);
  // Ctrl-C (or SIGTERM) between the stages below ends them there: the rows
  // so far are kept, and with no save round measured save_s stays 0.
  if (interrupted()) return out;

  {
    AlignedBuffer back(bytes);
    std::memset(back.data(), 0, bytes);  // fault the pages in before the timed read
    const ReadTimes r = read_file(scratch, back.data(), bytes, true, 1, cfg.chunk);
    Row row = checkpoint_stage_row("raw_read", cfg.bytes, 1, cfg.chunk, true, r.read_s);
    row.note = r.direct ? "O_DIRECT: read from storage, not the page cache"
                        : "the filesystem refuses O_DIRECT: cached pages were dropped (fadvise) where possible, "
                          "but the read may be served from the page cache";
    report.rows.push_back(row);
  }
  if (interrupted()) return out;

  // Buffered: write() returns once the data is in the page cache.
  w = write_file(scratch, state, bytes, {.threads = 1, .chunk = cfg.chunk, .fsync = false, .direct = false});
  Row buffered = checkpoint_stage_row("buffered_write", cfg.bytes, 1, cfg.chunk, false, w.write_s);
  buffered.note = "page cache only: not durable";
  report.rows.push_back(buffered);
  if (interrupted()) return out;

  w = write_file(scratch, state, bytes, {.threads = 1, .chunk = cfg.chunk, .fsync = true, .direct = false});
  Row with_fsync = checkpoint_stage_row("write_fsync", cfg.bytes, 1, cfg.chunk, true, w.write_s + w.fsync_s);
  with_fsync.metric("fsync_s", w.fsync_s);
  report.rows.push_back(with_fsync);
  if (interrupted()) return out;

  try {
    w = write_file(scratch, state, bytes, {.threads = 1, .chunk = cfg.chunk, .fsync = true, .direct = true});
    report.rows.push_back(checkpoint_stage_row("odirect_write", cfg.bytes, 1, cfg.chunk, true, w.write_s + w.fsync_s));
  } catch (const DirectIoUnsupported& e) {
    Row row = checkpoint_stage_row("odirect_write", cfg.bytes, 1, cfg.chunk, true, 0);
    row.metrics = {{"time_s", std::numeric_limits<double>::quiet_NaN()}, {"GBps", std::numeric_limits<double>::quiet_NaN()}};
    row.status = "skipped";
    row.note = e.what();
    report.rows.push_back(row);
  }

  // Writer threads x chunk size, each write + fsync.
  std::set<std::pair<unsigned, std::size_t>> shapes;
  for (unsigned t : {1u, 4u, cfg.threads}) shapes.insert({t, cfg.chunk});
  for (std::size_t c : {std::size_t{1} << 20, std::size_t{16} << 20, cfg.chunk}) shapes.insert({cfg.threads, c});
  for (const auto& [threads, chunk] : shapes) {
    if (interrupted()) return out;
    w = write_file(scratch, state, bytes, {.threads = threads, .chunk = chunk, .fsync = true, .direct = false});
    report.rows.push_back(checkpoint_stage_row("writers", cfg.bytes, threads, chunk, true, w.write_s + w.fsync_s));
  }
  // The whole synchronous safe save, the stall training would see, in rounds
  // alternating with a raw write + fsync of the same threads and chunk: a
  // disk that slows as it fills, heats or throttles then slows both alike,
  // and the save's share of the ceiling compares their medians.
  const WriteOptions save_options{.threads = cfg.threads, .chunk = cfg.chunk, .fsync = cfg.fsync, .direct = false};
  const WriteOptions paired_raw{.threads = cfg.threads, .chunk = cfg.chunk, .fsync = true, .direct = false};
  std::vector<double> raw_rounds, save_rounds;
  std::vector<SaveSteps> rounds;
  // Each raw write goes to a new file renamed over the last one, as the save
  // does: overwriting a file in place can reuse its blocks, while a new file
  // needs fresh ones, which on thin-provisioned or discard-mounted storage
  // (this project's VMs) costs several times more. Without this the gap would
  // be the filesystem's allocation, not the safety steps.
  const fs::path scratch_new = scratch.string() + ".new";
  struct CleanupNew {
    fs::path p;
    RemovedOnForcedExit also_on_forced_exit{p.c_str()};
    ~CleanupNew() { remove_quietly(p); }
  } cleanup_new{scratch_new};
  // The order flips every round (raw, save | save, raw | ...): storage and
  // memory that alternate fast and slow writes (on this project's VMs, tmpfs
  // and the discard-mounted disk both do, in a period of two writes) would
  // otherwise give one of the pair every slow slot and bias the ratio.
  auto raw_round = [&] {
    const WriteTimes raw_times = write_file(scratch_new, state, bytes, paired_raw);
    fs::rename(scratch_new, scratch);
    raw_rounds.push_back(raw_times.write_s + raw_times.fsync_s);
  };
  // The previous checkpoint's data is freed after each save, outside its
  // stall (a trainer does it in the background), and costed on its own row.
  // A failed save cleans up its own second name for the previous data.
  auto save_round = [&] {
    rounds.push_back(safe_save(cfg.dir, cfg.name, state, bytes, save_options, PreviousData::defer));
    save_rounds.push_back(rounds.back().total_s);
    rounds.back().release_previous_s = release_previous_checkpoint(cfg.dir, cfg.name);
  };
  for (unsigned round = 0; round < std::max(1u, cfg.rounds); ++round) {
    if (interrupted()) break;  // Ctrl-C: the rounds so far make the medians
    if (round % 2 == 0) {
      raw_round();
      save_round();
    } else {
      save_round();
      raw_round();
    }
  }
  remove_quietly(scratch);
  if (rounds.empty() || raw_rounds.empty()) return out;  // interrupted before a whole pair
  const Summary raw_summary = summarize(raw_rounds), save_summary = summarize(save_rounds);
  // The steps shown are those of the median round, so they add up to the
  // save row's time.
  const SaveSteps& s = rounds[median_round(save_rounds)];
  const double raw_median = raw_rounds[median_round(raw_rounds)];
  out.save_s = s.total_s;

  Row paired = checkpoint_stage_row("raw_write_paired", cfg.bytes, cfg.threads, cfg.chunk, true, raw_median);
  paired.metric("time_cv", raw_summary.cv);
  paired.note = "raw write + fsync of a new file with the save's threads and chunk, " + median_note(raw_rounds.size()) +
                ", paired with the saves";
  report.rows.push_back(paired);

  auto step = [&](const std::string& name, double seconds, const std::string& note) {
    Row row = checkpoint_stage_row("save." + name, cfg.bytes, cfg.threads, cfg.chunk, cfg.fsync, seconds);
    row.note = note;
    // Rename, directory fsync and manifest move no state bytes: a rate would mislead.
    if (name == "rename" || name == "fsync_dir" || name == "manifest")
      row.metrics[1].second = std::numeric_limits<double>::quiet_NaN();
    report.rows.push_back(row);
  };
  step("checksum", s.checksum_s,
       "XXH64 per chunk, stored in the manifest: hashed by each writer thread just before it writes the chunk, "
       "so this is inside save.write (the writers' mean hashing time), not added to the save");
  step("write", s.write_s, "to the temporary name");
  step("fsync_file", s.fsync_file_s, cfg.fsync ? "" : "skipped (--no-fsync)");
  step("manifest", s.manifest_s, "written and fsynced under a temporary name before the renames");
  step("rename", s.rename_s, "data, then manifest: temporary names -> final names, back to back");
  step("fsync_dir", s.fsync_dir_s, "makes both renames durable (kept with --no-fsync: it is the manifest's)");
  // Its own median, over the rounds that had previous data to free (the
  // first save into an empty directory has none).
  std::vector<double> releases;
  for (const auto& round : rounds)
    if (round.kept_previous) releases.push_back(round.release_previous_s);
  Row release = checkpoint_stage_row("release_previous", cfg.bytes, cfg.threads, cfg.chunk, cfg.fsync,
                                     releases.empty() ? 0 : releases[median_round(releases)]);
  release.metrics[1].second = std::numeric_limits<double>::quiet_NaN();
  if (releases.empty()) {
    release.metrics.clear();
    release.status = "skipped";
    release.note = "no previous checkpoint to free (one save into an empty directory, or no hard links here)";
  } else {
    release.note = "the previous checkpoint's data freed after the stall, not in it (a trainer does this in the "
                   "background): a second name kept it alive through the rename; " + median_note(releases.size());
  }
  report.rows.push_back(release);
  Row save = checkpoint_stage_row("save", cfg.bytes, cfg.threads, cfg.chunk, cfg.fsync, s.total_s);
  const double fraction = raw_median / s.total_s * 100.0;
  // A save without fsync is not durable: against a durable ceiling its share
  // would read as several hundred percent and mean nothing.
  if (cfg.fsync) save.metric("ceiling_pct", fraction);
  save.metric("time_cv", save_summary.cv);
  save.note = std::string(cfg.fsync ? "synchronous safe save: the stall"
                                    : "synchronous save without fsync: NOT durable, so not compared with the ceiling") +
              "; " + median_note(save_rounds.size());
  report.rows.push_back(save);
  report.summary.push_back({"storage ceiling",
                            format_number(gbps(cfg.bytes, raw_median), 2) + " GB/s: raw write + fsync of a new file, " +
                                std::to_string(cfg.threads) + (cfg.threads == 1 ? " writer x " : " writers x ") +
                                format_size(cfg.chunk) + " (the save's), " +
                                "median of " + std::to_string(raw_rounds.size()) + " rounds paired with the saves"});
  report.summary.push_back({"synchronous save (stall)",
                            format_number(s.total_s, 3) + " s, " + format_number(gbps(cfg.bytes, s.total_s), 2) +
                                " GB/s" +
                                (cfg.fsync ? ": " + format_number(fraction, 1) + "% of the ceiling"
                                           : ": without fsync, not durable (no share of the ceiling)")});
  // Storage whose write times swing this much (thin-provisioned or
  // discard-mounted volumes, shared disks) makes the ratio a coin toss: say
  // so rather than let it pass for the save's overhead.
  constexpr double kNoisyCv = 0.25;
  if (raw_rounds.size() > 1 && (raw_summary.cv > kNoisyCv || save_summary.cv > kNoisyCv)) {
    const std::string warning = "storage noisy: raw write CV " + format_number(100 * raw_summary.cv, 0) +
                                "%, save CV " + format_number(100 * save_summary.cv, 0) + "%; " +
                                (cfg.fsync ? "the share of the ceiling is not conclusive"
                                           : "the save's time is not conclusive") +
                                " (more --rounds, a quieter disk)";
    report.rows.back().note += "; " + warning;
    report.summary.push_back({"warning (storage)", warning});
  }
  return out;
}

std::optional<double> run_restore_stage(const CheckpointConfig& cfg, AlignedBuffer& into, Report& report) {
  try {
    // --rounds restores too; the steps shown are the median round's, so they
    // add up to the restore row. A rejected checkpoint stops at the first.
    std::vector<RestoreSteps> rounds;
    for (unsigned round = 0; round < std::max(1u, cfg.rounds) && (round == 0 || !interrupted()); ++round)
      rounds.push_back(restore_checkpoint(cfg.dir, cfg.name, into, cfg.threads, cfg.chunk));
    std::vector<double> totals;
    for (const auto& round : rounds) totals.push_back(round.total_s);
    const RestoreSteps& r = rounds[median_round(totals)];
    Row read = checkpoint_stage_row("restore.read", r.bytes, cfg.threads, cfg.chunk, cfg.fsync, r.read_s);
    read.note = r.direct ? "O_DIRECT" : "the filesystem refuses O_DIRECT: may be served from the page cache";
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
  } catch (const CheckpointRejected& e) {
    Row row;
    row.param("stage", "restore").param("bytes", "0").param("threads", std::to_string(cfg.threads));
    row.param("chunk", format_size(cfg.chunk)).param("fsync", cfg.fsync ? "1" : "0");
    row.status = "wrong";
    row.note = std::string("refused: ") + e.what();
    report.rows.push_back(row);
    report.summary.push_back({"restore", row.note});
    return std::nullopt;
  }
}

double cpu_load_rate(double seconds, const std::function<bool()>& stop) {
  // Independent FMA chains: a compute-bound loop whose rate drops only when
  // the core, its caches or memory bandwidth are taken by the persist.
  constexpr int kBatch = 1 << 16;
  double a0 = 1.0, a1 = 1.1, a2 = 1.2, a3 = 1.3;
  const double m = 0.999999, c = 1e-6;
  std::uint64_t iterations = 0;
  const double t0 = steady_seconds();
  double t = t0;
  // Work first, then the check: a persist that finished before the first
  // check would otherwise leave a rate of 0, read as a 100% slowdown.
  do {
    for (int i = 0; i < kBatch; ++i) {
      a0 = a0 * m + c;
      a1 = a1 * m + c;
      a2 = a2 * m + c;
      a3 = a3 * m + c;
    }
    iterations += kBatch;
    t = steady_seconds();
  } while (stop ? !stop() : (t - t0 < seconds));
  volatile double sink = a0 + a1 + a2 + a3;  // keeps the loop from being removed
  (void)sink;
  return t > t0 ? static_cast<double>(iterations) / (t - t0) : 0;
}

TrainingLoad cpu_training_load() {
  return {"CPU FMA loop on one thread stands in for the training step", cpu_load_rate};
}

AsyncResults run_async_save(const CheckpointConfig& cfg, const std::function<double()>& snapshot,
                            const std::byte* snapshot_data, const std::string& snapshot_label,
                            const TrainingLoad& training, Report& report) {
  AsyncResults out;
  out.load_alone_per_s = training.rate(1.0, {});
  out.snapshot_s = snapshot();

  std::atomic<bool> done{false};
  std::exception_ptr failure, load_failure;
  const WriteOptions options{.threads = cfg.threads, .chunk = cfg.chunk, .fsync = cfg.fsync, .direct = false};
  const double t0 = steady_seconds();
  // The persist times itself: the load notices `done` only after its current
  // batch (it always runs one), and that overshoot is not the persist's.
  double persist_end = t0;
  std::thread persist([&] {
    try {
      safe_save(cfg.dir, cfg.name, snapshot_data, static_cast<std::size_t>(cfg.bytes), options);
    } catch (...) {
      failure = std::current_exception();
    }
    persist_end = steady_seconds();
    done = true;
  });
  // A load that throws (a GPU error) must not leave the thread joinable:
  // std::thread's destructor would std::terminate and lose the report.
  try {
    out.load_during_per_s = training.rate(0, [&] { return done.load(); });
  } catch (...) {
    load_failure = std::current_exception();
  }
  persist.join();
  out.persist_s = persist_end - t0;
  if (failure) std::rethrow_exception(failure);
  if (load_failure) std::rethrow_exception(load_failure);
  // The load alone again, after: a GPU whose clocks sag as it heats (or a CPU
  // that turbo-boosts less) would otherwise read as the persist's slowdown.
  // The baseline is the mean of the runs before and after.
  out.load_alone_per_s = (out.load_alone_per_s + training.rate(1.0, {})) / 2;

  Row snap = checkpoint_stage_row("async.snapshot", cfg.bytes, 1, cfg.bytes, cfg.fsync, out.snapshot_s);
  snap.note = "the only stall: copy of the state to " + snapshot_label;
  report.rows.push_back(snap);
  Row persist_row = checkpoint_stage_row("async.persist", cfg.bytes, cfg.threads, cfg.chunk, cfg.fsync, out.persist_s);
  persist_row.note = "safe save from a background thread while the load runs";
  report.rows.push_back(persist_row);
  Row load;
  load.param("stage", "async.load").param("bytes", std::to_string(cfg.bytes)).param("threads", "1");
  load.param("chunk", format_size(cfg.chunk)).param("fsync", cfg.fsync ? "1" : "0");
  const double slowdown = out.load_alone_per_s > 0 ? 100.0 * (1.0 - out.load_during_per_s / out.load_alone_per_s) : 0;
  load.metric("load_alone_iters_per_s", out.load_alone_per_s)
      .metric("load_during_iters_per_s", out.load_during_per_s)
      .metric("load_slowdown_pct", slowdown);
  load.note = training.description + "; alone: mean of 1 s before and 1 s after the persist";
  report.rows.push_back(load);
  report.summary.push_back({"async save", "stall " + format_number(out.snapshot_s, 3) + " s, persist " +
                                              format_number(out.persist_s, 3) + " s, load slowdown " +
                                              format_number(slowdown, 1) + "%"});
  return out;
}

void add_checkpoint_advice(const CheckpointConfig& cfg, double mtbf_s, const std::string& mtbf_source,
                           std::optional<double> sync_save_s, std::optional<AsyncResults> async,
                           std::optional<double> restore_s, Report& report) {
  const double restore = restore_s.value_or(0);
  // The source says where M came from: the default, --mtbf or --gpu-mtbf / --gpus.
  if (sync_save_s || async)
    report.summary.push_back({"mtbf", format_number(mtbf_s / 3600, 2) + " h: " + mtbf_source});
  auto add = [&](const std::string& stage, double cost, const CheckpointAdvice& a, const std::string& note) {
    Row row;
    row.param("stage", stage).param("bytes", std::to_string(cfg.bytes)).param("threads", std::to_string(cfg.threads));
    row.param("chunk", format_size(cfg.chunk)).param("fsync", cfg.fsync ? "1" : "0");
    row.metric("cost_s", cost).metric("mtbf_h", mtbf_s / 3600).metric("interval_s", a.interval_s);
    row.metric("overhead_pct", a.overhead_pct).metric("lost_work_s", a.lost_work_s);
    row.note = note + "; MTBF " + mtbf_source + (restore_s ? "" : "; restore time not measured (0)");
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
                                  format_number(a.lost_work_s / 60, 1) + " min"});
  };
  if (sync_save_s)
    add("advice_sync", *sync_save_s, young_daly_advice(*sync_save_s, mtbf_s, restore),
        "Young/Daly: sqrt(2 C MTBF), C = the synchronous save");
  if (async)
    add("advice_async", async->snapshot_s,
        young_daly_async_advice(async->snapshot_s, async->persist_s, mtbf_s, restore),
        "Young/Daly with C = the snapshot stall, interval >= persist time");
}

}  // namespace redline
