#include "bench/checkpoint/checkpoint_run.hpp"

#include <sys/statvfs.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <new>
#include <thread>

#include "bench/checkpoint/gpu_stages.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline {

namespace {

// --- the stages ----------------------------------------------------------------

void run_storage(CheckpointRun& run) {
  // 0: interrupted before a whole save round.
  if (const double s = run_storage_stages(run.plan.cfg, run.state.data(), run.report).save_s; s > 0) run.save_s = s;
}

// A copy that failed its check fails the run, as a failed stage does.
void run_gpu_copies(CheckpointRun& run) {
  const std::size_t first = run.report.rows.size();
  run.d2h_s = add_gpu_copy_rows(run.plan.cfg, run.no_gpu, run.report);
  const auto& rows = run.report.rows;
  if (std::any_of(rows.begin() + static_cast<std::ptrdiff_t>(first), rows.end(),
                  [](const Row& row) { return row.status == RowStatus::wrong; }))
    run.failed = true;
}

// With the state on a GPU, the synchronous stall is the copy to the host and
// then the save; the advice uses the whole of it.
void add_sync_stall(CheckpointRun& run) {
  const CheckpointConfig& cfg = run.plan.cfg;
  if (run.save_s && run.d2h_s) {
    Row stall = checkpoint_stage_row("sync.stall", cfg.bytes, cfg.threads, cfg.chunk, cfg.fsync, *run.d2h_s + *run.save_s);
    stall.note = "GPU->host pinned copy (" + format_number(*run.d2h_s, 3) + " s) + synchronous save";
    run.report.rows.push_back(stall);
    run.save_s = *run.d2h_s + *run.save_s;
  } else if (run.save_s && !run.no_gpu && !interrupted()) {
    run.report.summary.push_back({"warning (gpu)", "the GPU stage failed (see its row): the synchronous stall and its "
                                                   "advice leave out the GPU->host copy"});
  }
}

void run_gpu_async(CheckpointRun& run) {
  run.gpu_async_failed = true;  // until it returns
  run.async = run_gpu_async_save(run.plan.cfg, run.report);
  run.gpu_async_failed = false;
}

void run_host_async(CheckpointRun& run) {
  const CheckpointConfig& cfg = run.plan.cfg;
  run.second = AlignedBuffer(cfg.bytes);
  // A training job keeps its snapshot buffer resident: fault its pages in
  // now, or the timed stall would measure the kernel's first touch.
  std::memset(run.second.data(), 0xA5, run.second.size());
  // After a failed GPU attempt the rows must not say "no GPU": there is one,
  // and its failure is the stage=async row above these.
  TrainingLoad load = cpu_training_load();
  std::string label = "host memory (no GPU: a memcpy on every core)";
  if (run.gpu_async_failed) {
    label = "host memory (the GPU async save failed, see the stage=async row: a host memcpy on every core stands in)";
    load.description = "the GPU async save failed (see the stage=async row): " + load.description;
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const auto copy = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    parallel_copy(run.second.data(), run.state.data(), run.state.size(), cores);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  run.async = run_async_save(cfg, {copy, run.second.data(), label, cores}, load, run.report);
}

void run_restore(CheckpointRun& run) {
  run.restore_s = run_restore_stage(run.plan.cfg, run.second, run.report);
  run.refused = !run.restore_s;
  if (!run.plan.save) run.plan.cfg.bytes = run.second.size();
}

// With a GPU, restore ends on it; its time joins the restore the advice uses.
void run_restore_to_gpu(CheckpointRun& run) {
  const auto seconds = add_restore_to_gpu_row(run.second, run.plan.cfg, run.no_gpu, run.report);
  if (!seconds) return;
  *run.restore_s += *seconds;
  run.report.summary.push_back({"restore to the GPU (read + verify + copy)", format_number(*run.restore_s, 3) + " s"});
}

void add_advice(CheckpointRun& run) {
  add_checkpoint_advice(run.plan.cfg, run.plan.mtbf_s, run.plan.mtbf_source, run.save_s, run.async, run.restore_s,
                        run.report);
}

// --- running them ----------------------------------------------------------------

// The status of a stage that threw: out of host memory is oom; GPU failures
// say their own; anything else is an error in running the benchmark.
RowStatus failure_status(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) return RowStatus::oom;
  return gpu_failure_status(e).value_or(RowStatus::error);
}

// A stage that fails (a full disk, an I/O error, a GPU error) becomes an
// error row and the run goes on: the stages measured so far are kept.
void attempt(CheckpointRun& run, const CheckpointStage& stage) {
  try {
    stage.run(run);
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    // Keyed as the stage's own rows are, so a failed night's row meets a good one's.
    const CheckpointConfig& cfg = run.plan.cfg;
    Row row = checkpoint_params_row(std::string(stage.name), cfg.bytes, cfg.threads, cfg.chunk, cfg.fsync);
    row.status = failure_status(e);
    row.note = e.what();
    run.report.rows.push_back(row);
    std::cerr << "checkpoint_bench: " << stage.name << ": " << e.what() << "\n";
    run.failed = true;
  }
}

// At the peak a save round holds three copies of the state in --dir (the
// scratch file, the checkpoint and the next one being written): warn before
// minutes of work end in "No space left on device".
void warn_if_short_of_space(CheckpointRun& run) {
  const CheckpointConfig& cfg = run.plan.cfg;
  struct statvfs fs_info {};
  if (::statvfs(cfg.dir.c_str(), &fs_info) != 0) return;
  const double free_bytes = static_cast<double>(fs_info.f_bavail) * static_cast<double>(fs_info.f_frsize);
  if (free_bytes >= 3.0 * static_cast<double>(cfg.bytes)) return;
  const std::string warning = "--dir has " + format_size(static_cast<std::uint64_t>(free_bytes)) +
                              " free; a save round needs about 3 x the state (" + format_size(3 * cfg.bytes) +
                              "): expect it to run out of space";
  std::cerr << "checkpoint_bench: warning: " << warning << "\n";
  run.report.summary.push_back({"warning (space)", warning});
}

}  // namespace

const std::vector<CheckpointStage>& checkpoint_stages() {
  using R = const CheckpointRun&;
  static const std::vector<CheckpointStage> stages = {
      {"save", "the storage stages: ceiling, writes, writer shapes, and the safe save in rounds with each step", true,
       [](R r) { return r.plan.save; }, run_storage},
      {"gpu", "GPU->host copies (pageable, pinned on 1/2/4 streams) against cudaMemcpy's ceiling, and host->GPU",
       true, [](R r) { return r.plan.gpu; }, run_gpu_copies},
      {"sync.stall", "the synchronous stall with the state on a GPU: the pinned copy plus the save", false,
       [](R r) { return r.plan.save; }, add_sync_stall},
      {"async", "the async save from a GPU: the pinned snapshot's stall, the persist, a GEMM load's slowdown", true,
       [](R r) { return r.plan.save && !r.no_gpu; }, run_gpu_async},
      {"async", "the async save in host memory (no GPU, or it failed): memcpy snapshot, persist, a CPU load", true,
       [](R r) { return r.plan.save && !r.async; }, run_host_async},
      {"restore", "read + verify of the checkpoint, in rounds; refused when torn or corrupt", true,
       [](R r) { return r.plan.restore; }, run_restore},
      {"restore.h2d", "the restored state copied to the GPU and checked", true,
       [](R r) { return r.restore_s.has_value(); }, run_restore_to_gpu},
      {"advice", "Young/Daly: how often to checkpoint, the overhead and the work lost per failure", false,
       [](R r) { return r.plan.save || r.restore_s.has_value(); }, add_advice},
  };
  return stages;
}

CheckpointRun start_run(CheckpointPlan plan) {
  CheckpointRun run;
  run.plan = std::move(plan);
  run.no_gpu = gpu_unavailable();
  if (run.plan.gpu_only() && run.no_gpu) throw CannotRun(*run.no_gpu);
  // `all` removes its checkpoint at the end; a second signal ends the run
  // before that, so the files are armed for removal then too.
  // (safe_save arms its temporary files itself.)
  if (run.plan.own_checkpoint) {
    const CheckpointPaths paths = checkpoint_paths(run.plan.cfg.dir, run.plan.cfg.name);
    for (const auto& file : {paths.data, paths.manifest, paths.previous})
      run.own_files.push_back(std::make_unique<RemovedOnForcedExit>(file.c_str()));
  }
  run.report = start_report("checkpoint_bench", capture_environment());
  if (!run.plan.size_source.empty())
    run.report.summary.push_back(
        {"state size", format_size(run.plan.cfg.bytes) + " (" + run.plan.size_source + ")"});
  if (run.plan.save) {
    warn_if_short_of_space(run);
    run.state = AlignedBuffer(run.plan.cfg.bytes);
    fill_random(run.state.data(), run.state.size(), 0x5EED, std::thread::hardware_concurrency());
  }
  return run;
}

void run_checkpoint_stages(CheckpointRun& run) {
  for (const CheckpointStage& stage : checkpoint_stages()) {
    // After Ctrl-C the stages not yet begun are left out; the report keeps
    // what was measured (the harness turns a second Ctrl-C into an exit).
    if (stage.measures_anew && interrupted()) continue;
    if (stage.wanted(run)) attempt(run, stage);
  }
}

void finish_run(CheckpointRun& run) {
  // `all` measured a save and its restore: leave the directory as it was (a
  // nightly suite must not pile up checkpoints). `save` keeps it for a later
  // `restore`.
  if (run.plan.own_checkpoint) {
    const CheckpointPaths paths = checkpoint_paths(run.plan.cfg.dir, run.plan.cfg.name);
    std::error_code ec;
    for (const auto& file : {paths.data, paths.manifest, paths.temp, paths.manifest_temp, paths.previous})
      std::filesystem::remove(file, ec);
  }
  if (interrupted())
    run.report.summary.push_back(
        {"interrupted", "Ctrl-C: the stages measured so far are reported; later ones did not run"});
}

int exit_status(const CheckpointRun& run) {
  if (interrupted()) return 128 + (interrupt_signal() ? interrupt_signal() : 2);
  return run.refused || run.failed ? kExitCheckFailed : kExitOk;
}

}  // namespace redline
