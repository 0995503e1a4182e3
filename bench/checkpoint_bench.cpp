// checkpoint_bench save|restore|all|gpu: what a training checkpoint costs on
// this node and its storage (stall, bandwidth against the storage's own
// ceiling, each safety step), whether an async save hides the stall, and how
// often to checkpoint for a failure rate (Young/Daly).
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "harness/core/atomic_file.hpp"
#include "harness/checkpoint/checkpoint_io.hpp"
#include "harness/checkpoint/checkpoint_model.hpp"
#include "harness/checkpoint/checkpoint_stages.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/report/tool_main.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#ifdef REDLINE_HAVE_CHECKPOINT_GPU
#include "kernels/checkpoint_copy.cuh"
#include "kernels/gemm_load.cuh"
#endif

using namespace redline;

namespace {

struct Flags {
  std::string command;
  std::string size, params, model, optimizer = "adam", dir;
  std::string threads = "4", chunk = "64M", rounds = "4";
  std::string mtbf, gpu_mtbf, gpus;
  bool no_fsync = false, keep = false, overwrite = false;
  OutputOptions output;
};

struct Plan {
  bool save = false, restore = false, gpu = false;
  // `all` without --keep: the checkpoint it writes is its own, under its own
  // name, and removed at the end.
  bool own_checkpoint = false;
  CheckpointConfig cfg;
  double mtbf_s = 24 * 3600.0;
  std::string mtbf_source = "the default (pass --mtbf, or --gpu-mtbf with --gpus)";
  std::string size_source;
};

double hours(const char* flag, const std::string& text) {
  const double h = parse_number(flag, text);
  require_positive(flag, text, h);
  return h;
}

Plan to_plan(const Flags& f) {
  Plan p;
  if (f.command == "save") p.save = p.gpu = true;
  else if (f.command == "restore") p.restore = true;
  else if (f.command == "all") p.save = p.restore = p.gpu = true;
  else if (f.command == "gpu") p.gpu = true;
  else throw UsageError("COMMAND", f.command, "use save, restore, all or gpu");

  const auto optimizer = parse_optimizer(f.optimizer);
  if (!optimizer) throw UsageError("--optimizer", f.optimizer, "use adam, sgd or none");
  if (!f.size.empty()) {
    p.cfg.bytes = parse_size("--size", f.size);
    if (p.cfg.bytes == 0) throw UsageError("--size", f.size, "must be at least 1 byte");
    p.size_source = "--size " + f.size;
  } else if (!f.params.empty() || !f.model.empty()) {
    std::uint64_t parameters = 0;
    if (!f.params.empty()) {
      parameters = static_cast<std::uint64_t>(parse_count("--params", f.params));
      if (parameters == 0) throw UsageError("--params", f.params, "must be at least 1");
    } else {
      const auto preset = preset_parameters(f.model);
      if (!preset) {
        std::string names;
        for (const auto& m : model_presets()) names += (names.empty() ? "" : ", ") + m.name;
        throw UsageError("--model", f.model, "unknown preset; use one of " + names);
      }
      parameters = *preset;
    }
    try {
      p.cfg.bytes = checkpoint_state_bytes(parameters, *optimizer);
    } catch (const std::overflow_error& e) {
      throw UsageError(f.params.empty() ? "--model" : "--params", f.params.empty() ? f.model : f.params, e.what());
    }
    p.size_source = std::to_string(parameters) + " params x " + std::to_string(checkpoint_bytes_per_param(*optimizer)) +
                    " B (" + to_string(*optimizer) + ")";
  } else if (p.save || p.gpu) {
    throw UsageError("give the state size: --size BYTES, --params N or --model PRESET");
  }

  if (f.dir.empty() && (p.save || p.restore)) throw UsageError("--dir PATH is required");
  if (!f.dir.empty()) {
    // A restore only reads: a read-only mount or backup copy is fine.
    if (const auto problem = directory_problem(f.dir, p.save)) throw UsageError("--dir", f.dir, *problem);
    p.cfg.dir = f.dir;
  }
  p.cfg.threads = static_cast<unsigned>(parse_count_between("--threads", f.threads, 1, 256));
  p.cfg.chunk = parse_size("--chunk", f.chunk);
  if (p.cfg.chunk < 4096 || p.cfg.chunk > (std::size_t{1} << 30))
    throw UsageError("--chunk", f.chunk, "must be between 4K and 1G");
  p.cfg.fsync = !f.no_fsync;
  // `all` removes what it wrote: under a name of its own, so it never
  // replaces a checkpoint.bin the user keeps in --dir, and two runs sharing
  // a directory (/tmp in the default suite) never meet. --keep and `save`
  // write checkpoint.bin, the name a later `restore` reads.
  p.own_checkpoint = p.save && p.restore && !f.keep;
  if (p.own_checkpoint) p.cfg.name = "redline-checkpoint-" + host_and_pid() + ".bin";
  // A benchmark never destroys a file it did not create: checkpoint.bin may
  // replace only a checkpoint redline saved, unless the user says so.
  if (p.save && !p.own_checkpoint && !f.overwrite)
    if (const auto problem = foreign_checkpoint_problem(p.cfg.dir, p.cfg.name))
      throw UsageError("--dir", f.dir,
                       *problem + ": refusing to replace a file redline did not write (--overwrite replaces it)");
  p.cfg.rounds = static_cast<unsigned>(parse_count_between("--rounds", f.rounds, 1, 100));

  if (!f.mtbf.empty() && !f.gpu_mtbf.empty())
    throw UsageError("--gpu-mtbf", f.gpu_mtbf, "give either --mtbf (the job's) or --gpu-mtbf with --gpus, not both");
  if (!f.mtbf.empty()) {
    p.mtbf_s = hours("--mtbf", f.mtbf) * 3600;
    p.mtbf_source = "--mtbf " + f.mtbf + " h";
  } else if (!f.gpu_mtbf.empty()) {
    if (f.gpus.empty()) throw UsageError("--gpu-mtbf", f.gpu_mtbf, "needs --gpus N (the job's GPU count)");
    const auto gpus = parse_count_between("--gpus", f.gpus, 1, 1 << 24);
    // Independent failures: the job fails when any GPU does.
    p.mtbf_s = hours("--gpu-mtbf", f.gpu_mtbf) * 3600 / static_cast<double>(gpus);
    p.mtbf_source = "--gpu-mtbf " + f.gpu_mtbf + " h / " + std::to_string(gpus) + " GPUs";
  } else if (!f.gpus.empty()) {
    throw UsageError("--gpus", f.gpus, "only counts with --gpu-mtbf");
  }

  // The state and one copy (snapshot / restore target) live in host memory.
  const double physical = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (p.save && physical > 0 && 2.0 * static_cast<double>(p.cfg.bytes) > 0.9 * physical)
    throw UsageError(f.size.empty() ? (f.params.empty() ? "--model" : "--params") : "--size",
                     f.size.empty() ? (f.params.empty() ? f.model : f.params) : f.size,
                     "needs twice the state (" + format_size(2 * p.cfg.bytes) + ") in host memory; this machine has " +
                         format_size(static_cast<std::uint64_t>(physical)));
  return p;
}

// The status of a stage that threw: out of host memory is "oom"; a GEMM load
// that computes a wrong result is "wrong" (a finding about the GPU, like a
// failed verification), not an "error" in running the benchmark.
std::string failure_status(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) return "oom";
#ifdef REDLINE_HAVE_CHECKPOINT_GPU
  if (is_gpu_out_of_memory(e)) return "oom";
  if (dynamic_cast<const GemmLoadWrong*>(&e)) return "wrong";
#endif
  return "error";
}

std::optional<std::string> gpu_unavailable() {
#ifdef REDLINE_HAVE_CHECKPOINT_GPU
  return checkpoint_gpu_unavailable_reason();
#else
  return std::string("built without CUDA");
#endif
}

// Returns the best pinned GPU->host copy of the whole state, in seconds: the
// part of a synchronous save's stall spent before storage sees a byte.
std::optional<double> add_gpu_rows(const Plan& p, const std::optional<std::string>& no_gpu, Report& report) {
  auto row_for = [&](const std::string& stage, const std::string& memory, int streams, double seconds) {
    Row row = checkpoint_stage_row(stage, p.cfg.bytes, 1, p.cfg.bytes, p.cfg.fsync, seconds);
    row.param("memory", memory).param("streams", std::to_string(streams));
    return row;
  };
  if (no_gpu) {
    for (const auto& [stage, memory] : {std::pair{"gpu.d2h", "pageable"}, {"gpu.d2h", "pinned"}, {"gpu.d2h_ceiling", "pinned"}, {"gpu.h2d", "pinned"}}) {
      Row row = row_for(stage, memory, 1, 0);
      row.metrics.clear();
      row.status = "skipped";
      row.note = *no_gpu;
      report.rows.push_back(row);
    }
    return std::nullopt;
  }
#ifdef REDLINE_HAVE_CHECKPOINT_GPU
  double ceiling = 0, best_pinned = 0;
  const auto timings = measure_checkpoint_copies(p.cfg.bytes);
  for (const auto& t : timings) {
    Row row = row_for("gpu." + t.stage, t.memory, t.streams, t.seconds);
    row.note = t.note;
    if (t.stage == "d2h_ceiling") ceiling = t.seconds;
    if (t.stage == "d2h" && t.memory == "pinned" && (best_pinned == 0 || t.seconds < best_pinned)) best_pinned = t.seconds;
    report.rows.push_back(row);
  }
  if (ceiling > 0 && best_pinned > 0)
    report.summary.push_back({"GPU->host pinned", format_number(100.0 * ceiling / best_pinned, 1) +
                                                      "% of the cudaMemcpy ceiling"});
  if (best_pinned > 0) return best_pinned;
#endif
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"What a training checkpoint costs here: GPU->host copies, storage stages against the storage's own "
               "ceiling, each safety step, restore with verification, async save, and the Young/Daly interval.\n\n"
               "State size: --size, or --params/--model x bytes per parameter (adam 14 B: bf16 weights 2 + fp32 "
               "master 4 + Adam m,v 8; sgd 10; none 6).",
               "checkpoint_bench"};
  app.add_option("COMMAND", f.command, "save, restore, all, or gpu (GPU copy stages only)")->required();
  app.add_option("--size", f.size, "State size (64M, 4G); overrides --params/--model")->type_name("BYTES");
  app.add_option("--params", f.params, "Parameter count")->type_name("N");
  app.add_option("--model", f.model, "Preset parameter count: 125m 350m 1.3b 7b 8b 13b 30b 34b 65b 70b 175b 405b")->type_name("PRESET");
  app.add_option("--optimizer", f.optimizer, "adam (default), sgd or none");
  app.add_option("--dir", f.dir, "Directory on the storage to measure (checkpoint.bin is left there)")->type_name("PATH");
  app.add_flag("--no-fsync", f.no_fsync, "Save without the data's fsync (NOT durable): shows what it costs");
  app.add_flag("--keep", f.keep, "With all: keep the checkpoint in --dir (save alone always keeps it)");
  app.add_flag("--overwrite", f.overwrite,
               "Replace a checkpoint.bin in --dir that redline did not save (refused otherwise)");
  app.add_option("--threads", f.threads, "Writer/reader threads of the save and restore (default 4)");
  app.add_option("--chunk", f.chunk, "Bytes per write/read call (default 64M)")->type_name("SIZE");
  app.add_option("--rounds", f.rounds,
                 "Synchronous saves paired with raw writes + fsync, order flipped each round: the medians are compared (default 4; an even count balances the order)")
      ->type_name("N");
  app.add_option("--mtbf", f.mtbf, "Mean time between failures of the whole job, hours (default 24)")->type_name("HOURS");
  app.add_option("--gpu-mtbf", f.gpu_mtbf, "Mean time between failures of one GPU, hours (with --gpus)")->type_name("HOURS");
  app.add_option("--gpus", f.gpus, "GPUs in the job, for --gpu-mtbf")->type_name("N");
  add_output_flags(app, f.output);

  return run_tool(app, argc, argv, [&] {
    Plan p = to_plan(f);
    validate_output_paths(f.output);
    const auto no_gpu = gpu_unavailable();
    if (f.command == "gpu" && no_gpu) throw CannotRun(*no_gpu);

    // `all` removes its checkpoint at the end; a second signal ends the run
    // before that, so the files are armed for removal then too.
    std::vector<std::unique_ptr<RemovedOnForcedExit>> own_files;
    if (p.own_checkpoint) {
      const CheckpointPaths paths = checkpoint_paths(p.cfg.dir, p.cfg.name);
      for (const auto& file : {paths.data, paths.manifest, paths.previous})
        own_files.push_back(std::make_unique<RemovedOnForcedExit>(file.c_str()));
    }
    Report report = start_report("checkpoint_bench", capture_environment());
    if (!p.size_source.empty()) report.summary.push_back({"state size", format_size(p.cfg.bytes) + " (" + p.size_source + ")"});
    bool refused = false, failed = false;
    std::optional<double> save_s, restore_s;
    std::optional<AsyncResults> async;
    AlignedBuffer second;  // the async snapshot, then the restore target
    // A stage that fails (a full disk, an I/O error, a GPU error) becomes an
    // error row and the run goes on: the stages measured so far are kept.
    // After a Ctrl-C the stages not yet begun are left out; the report keeps
    // what was measured (the harness turns a second Ctrl-C into an exit).
    auto attempt = [&](const char* stage, const std::function<void()>& run) {
      if (interrupted()) return;
      try {
        run();
      } catch (const UsageError&) {
        throw;
      } catch (const std::exception& e) {
        Row row;
        row.param("stage", stage).param("bytes", std::to_string(p.cfg.bytes));
        row.status = failure_status(e);
        row.note = e.what();
        report.rows.push_back(row);
        std::cerr << "checkpoint_bench: " << stage << ": " << e.what() << "\n";
        failed = true;
      }
    };

    if (p.save) {
      // At the peak a save round holds three copies of the state in --dir
      // (the scratch file, the checkpoint and the next one being written):
      // warn before minutes of work end in "No space left on device".
      struct statvfs fs_info {};
      if (::statvfs(p.cfg.dir.c_str(), &fs_info) == 0) {
        const double free_bytes = static_cast<double>(fs_info.f_bavail) * static_cast<double>(fs_info.f_frsize);
        if (free_bytes < 3.0 * static_cast<double>(p.cfg.bytes)) {
          const std::string warning = "--dir has " + format_size(static_cast<std::uint64_t>(free_bytes)) +
                                      " free; a save round needs about 3 x the state (" +
                                      format_size(3 * p.cfg.bytes) + "): expect it to run out of space";
          std::cerr << "checkpoint_bench: warning: " << warning << "\n";
          report.summary.push_back({"warning (space)", warning});
        }
      }
      AlignedBuffer state(p.cfg.bytes);
      fill_random(state.data(), state.size(), 0x5EED, std::thread::hardware_concurrency());
      attempt("save", [&] {
        // 0: interrupted before a whole save round.
        if (const double s = run_storage_stages(p.cfg, state.data(), report).save_s; s > 0) save_s = s;
      });
      std::optional<double> d2h_s;
      attempt("gpu", [&] { d2h_s = add_gpu_rows(p, no_gpu, report); });
      // With the state on a GPU, the synchronous stall is the copy to the
      // host and then the save; the advice uses the whole of it.
      if (save_s && d2h_s) {
        Row stall = checkpoint_stage_row("sync.stall", p.cfg.bytes, p.cfg.threads, p.cfg.chunk, p.cfg.fsync,
                                         *d2h_s + *save_s);
        stall.note = "GPU->host pinned copy (" + format_number(*d2h_s, 3) + " s) + synchronous save";
        report.rows.push_back(stall);
        save_s = *d2h_s + *save_s;
      } else if (save_s && !no_gpu && !interrupted()) {
        report.summary.push_back({"warning (gpu)", "the GPU stage failed (see its row): the synchronous stall and its advice "
                                             "leave out the GPU->host copy"});
      }
      bool gpu_async_failed = false;
#ifdef REDLINE_HAVE_CHECKPOINT_GPU
      if (!no_gpu) {
        attempt("async", [&] {
          // The load first: its 8192^3 GEMM buffers must fit, and a snapshot
          // as large as the state allocated first could starve them.
          const GemmLoad gemm_load;
          GpuSnapshot gpu(p.cfg.bytes);
          const TrainingLoad load{gemm_load.description(),
                                  [&](double seconds, const std::function<bool()>& stop) {
                                    return gemm_load.rate(seconds, stop);
                                  }};
          async = run_async_save(p.cfg, [&] { return gpu.snapshot(); }, gpu.host(), "pinned host memory (GPU)", load,
                                 report);
        });
        gpu_async_failed = !async;
      }
#endif
      if (!async)
        attempt("async", [&] {
          second = AlignedBuffer(p.cfg.bytes);
          // A training job keeps its snapshot buffer resident: fault its pages in
          // now, or the timed stall would measure the kernel's first touch.
          std::memset(second.data(), 0xA5, second.size());
          // After a failed GPU attempt the rows must not say "no GPU": there is
          // one, and its failure is the stage=async row above these.
          TrainingLoad load = cpu_training_load();
          std::string label = "host memory (no GPU: a memcpy on every core)";
          if (gpu_async_failed) {
            label = "host memory (the GPU async save failed, see the stage=async row: a host memcpy on every core stands in)";
            load.description = "the GPU async save failed (see the stage=async row): " + load.description;
          }
          async = run_async_save(p.cfg, [&] {
            const auto t0 = std::chrono::steady_clock::now();
            parallel_copy(second.data(), state.data(), state.size(), std::max(1u, std::thread::hardware_concurrency()));
            return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          }, second.data(), label, load, report);
        });
    } else if (p.gpu) {
      attempt("gpu", [&] { add_gpu_rows(p, no_gpu, report); });
    }
    if (p.restore)
      attempt("restore", [&] {
        restore_s = run_restore_stage(p.cfg, second, report);
        refused = !restore_s;
        if (!p.save) p.cfg.bytes = second.size();
      });
    // With a GPU, restore ends on it: the restored state (pageable memory,
    // where the read lands) copied over and checked. Its time joins the
    // restore the advice uses.
    if (restore_s)
      attempt("restore.h2d", [&] {
        Row row = checkpoint_stage_row("restore.h2d", second.size(), 1, second.size(), p.cfg.fsync, 0);
        row.param("memory", "pageable").param("streams", "1");
        if (no_gpu) {
          row.metrics.clear();
          row.status = "skipped";
          row.note = *no_gpu;
          report.rows.push_back(row);
          return;
        }
#ifdef REDLINE_HAVE_CHECKPOINT_GPU
        const double seconds = restore_to_gpu(second.data(), second.size());
        row = checkpoint_stage_row("restore.h2d", second.size(), 1, second.size(), p.cfg.fsync, seconds);
        row.param("memory", "pageable").param("streams", "1");
        row.note = "restored state -> GPU, checked by copying it back";
        report.rows.push_back(row);
        *restore_s += seconds;
        report.summary.push_back({"restore to the GPU (read + verify + copy)", format_number(*restore_s, 3) + " s"});
#endif
      });
    if (p.save || restore_s) add_checkpoint_advice(p.cfg, p.mtbf_s, p.mtbf_source, save_s, async, restore_s, report);
    // `all` measured a save and its restore: leave the directory as it was
    // (a nightly suite must not pile up checkpoints). `save` keeps it for a later `restore`.
    if (p.own_checkpoint) {
      const CheckpointPaths paths = checkpoint_paths(p.cfg.dir, p.cfg.name);
      std::error_code ec;
      for (const auto& file : {paths.data, paths.manifest, paths.temp, paths.manifest_temp, paths.previous})
        std::filesystem::remove(file, ec);
    }
    if (interrupted())
      report.summary.push_back({"interrupted", "Ctrl-C: the stages measured so far are reported; later ones did not run"});
    write_reports(report, f.output);
    if (interrupted()) return 128 + (interrupt_signal() ? interrupt_signal() : 2);
    return refused || failed ? kExitCheckFailed : kExitOk;
  });
}
