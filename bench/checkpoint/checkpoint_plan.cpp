#include "bench/checkpoint/checkpoint_plan.hpp"

#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <utility>
#include <vector>

#include "harness/checkpoint/checkpoint_io.hpp"
#include "harness/checkpoint/checkpoint_model.hpp"
#include "harness/core/atomic_file.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/measure/young_daly.hpp"
#include "harness/report/tool_main.hpp"

namespace redline {

void add_checkpoint_flags(CLI::App& app, CheckpointFlags& f) {
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
}

namespace {

// A mean time between failures, of a job or of one GPU, in hours. Below 36 s no checkpoint of any
// size fits between failures (Young/Daly's first order no longer holds); above about 1,100 years no
// hardware is that reliable. Outside them (1e-300, 1e308) the advice's figures were 60-digit
// numbers, inf or nan.
const std::string kMtbfRange = "between 0.01 h (36 s) and 10000000 h (about 1,100 years)";

double hours(const char* flag, const std::string& text) {
  const double h = parse_number(flag, text);
  if (!(h >= kMinMtbfHours && h <= kMaxMtbfHours)) throw UsageError(flag, text, "must be " + kMtbfRange);
  return h;
}

// The flag the state size came from, and its value, for messages about it.
std::pair<const char*, std::string> size_flag(const CheckpointFlags& f) {
  if (!f.size.empty()) return {"--size", f.size};
  if (!f.params.empty()) return {"--params", f.params};
  return {"--model", f.model};
}

void plan_command(const std::string& command, CheckpointPlan& p) {
  if (command == "save") p.save = p.gpu = true;
  else if (command == "restore") p.restore = true;
  else if (command == "all") p.save = p.restore = p.gpu = true;
  else if (command == "gpu") p.gpu = true;
  else throw UsageError("COMMAND", command, "use save, restore, all or gpu");
}

// A flag a command would ignore while the user believes it did something.
struct IgnoredFlag {
  const char* flag;
  const std::string* value;  // nullptr for an on/off flag
  std::string why;
};

void refuse_given(const CheckpointFlags& f, const std::vector<IgnoredFlag>& ignored) {
  for (const auto& [flag, value, why] : ignored) {
    if (!f.given.count(flag)) continue;
    const std::string problem = "does nothing with " + f.command + ": " + why;
    if (value) throw UsageError(flag, *value, problem);
    throw UsageError(std::string(flag) + " " + problem);
  }
}

// restore takes the state's size from the manifest, writes nothing, and gives
// no checkpoint interval without a save's cost; gpu times host-device copies
// only, so it writes no file, and its copies have no writer threads, chunks or
// rounds (--no-fsync would only have changed its rows' case keys).
void refuse_flags_the_command_ignores(const CheckpointFlags& f) {
  const std::string needs_save = "the checkpoint interval needs a save's cost (use all)";
  if (f.command == "restore") {
    const std::string from_manifest = "the state's size comes from the checkpoint's manifest";
    refuse_given(f, {{"--size", &f.size, from_manifest},
                     {"--params", &f.params, from_manifest},
                     {"--model", &f.model, from_manifest},
                     {"--optimizer", &f.optimizer, from_manifest},
                     {"--keep", nullptr, "restore never removes the checkpoint"},
                     {"--overwrite", nullptr, "restore writes nothing"},
                     {"--no-fsync", nullptr, "restore writes nothing"},
                     {"--mtbf", &f.mtbf, needs_save},
                     {"--gpu-mtbf", &f.gpu_mtbf, needs_save},
                     {"--gpus", &f.gpus, needs_save}});
  } else if (f.command == "gpu") {
    const std::string no_file = "gpu copies between host and GPU memory and writes no file";
    const std::string own_shape = "the GPU copies are whole-state copies on their own streams";
    refuse_given(f, {{"--dir", &f.dir, no_file},
                     {"--keep", nullptr, no_file},
                     {"--overwrite", nullptr, no_file},
                     {"--no-fsync", nullptr, no_file},
                     {"--threads", &f.threads, own_shape},
                     {"--chunk", &f.chunk, own_shape},
                     {"--rounds", &f.rounds, own_shape},
                     {"--mtbf", &f.mtbf, needs_save},
                     {"--gpu-mtbf", &f.gpu_mtbf, needs_save},
                     {"--gpus", &f.gpus, needs_save}});
  }
}

std::uint64_t parameter_count(const CheckpointFlags& f) {
  if (!f.params.empty()) {
    const auto parameters = static_cast<std::uint64_t>(parse_count("--params", f.params));
    if (parameters == 0) throw UsageError("--params", f.params, "must be at least 1");
    return parameters;
  }
  if (const auto preset = preset_parameters(f.model)) return *preset;
  std::string names;
  for (const auto& m : model_presets()) names += (names.empty() ? "" : ", ") + m.name;
  throw UsageError("--model", f.model, "unknown preset; use one of " + names);
}

// --size, or a parameter count (--params or --model) x the optimizer's bytes
// per parameter.
void plan_state_size(const CheckpointFlags& f, CheckpointPlan& p) {
  const auto optimizer = parse_optimizer(f.optimizer);
  if (!optimizer) throw UsageError("--optimizer", f.optimizer, "use adam, sgd or none");
  // Two parameter counts, or an optimizer beside a size given in bytes: one
  // of them would be silently dropped.
  if (!f.params.empty() && !f.model.empty())
    throw UsageError("--model", f.model, "give the parameter count once: --params or --model, not both");
  if (!f.size.empty() && f.given.count("--optimizer"))
    throw UsageError("--optimizer", f.optimizer,
                     "does nothing with --size (the state's bytes are given); it sets the bytes per parameter of "
                     "--params or --model");
  if (!f.size.empty()) {
    p.cfg.bytes = parse_size("--size", f.size);
    if (p.cfg.bytes == 0) throw UsageError("--size", f.size, "must be at least 1 byte");
    // The same limit as a state from --params or --model.
    if (p.cfg.bytes > kMaxCheckpointStateBytes)
      throw UsageError("--size", f.size, std::string("must be at most ") + kMaxCheckpointStateText);
    p.size_source = "--size " + f.size;
  } else if (!f.params.empty() || !f.model.empty()) {
    const std::uint64_t parameters = parameter_count(f);
    try {
      p.cfg.bytes = checkpoint_state_bytes(parameters, *optimizer);
    } catch (const std::overflow_error& e) {
      const auto [flag, value] = size_flag(f);
      throw UsageError(flag, value, e.what());
    }
    p.size_source = std::to_string(parameters) + " params x " + std::to_string(checkpoint_bytes_per_param(*optimizer)) +
                    " B (" + to_string(*optimizer) + ")";
  } else if (p.save || p.gpu) {
    throw UsageError("give the state size: --size BYTES, --params N or --model PRESET");
  }
}

// --dir and the checkpoint's name in it.
void plan_storage(const CheckpointFlags& f, CheckpointPlan& p) {
  if (f.dir.empty() && (p.save || p.restore)) throw UsageError("--dir PATH is required");
  if (f.dir.empty()) return;
  // A restore only reads: a read-only mount or backup copy is fine.
  if (const auto problem = directory_problem(f.dir, p.save)) throw UsageError("--dir", f.dir, *problem);
  p.cfg.dir = f.dir;
  // A restore alone reads what an earlier save left: with no data there, --dir is the wrong
  // directory (bad input), not a torn save; a data file without its manifest still is one.
  if (p.restore && !p.save && !std::filesystem::exists(checkpoint_paths(p.cfg.dir, p.cfg.name).data))
    throw UsageError("no " + p.cfg.name + " in --dir '" + f.dir + "'");
  // `all` removes what it wrote: under a name of its own, so it never
  // replaces a checkpoint.bin the user keeps in --dir, and two runs sharing
  // a directory (/tmp in the default suite) never meet. --keep and `save`
  // write checkpoint.bin, the name a later `restore` reads.
  p.own_checkpoint = p.save && p.restore && !f.keep;
  if (p.own_checkpoint) p.cfg.name = "redline-checkpoint-" + host_and_pid() + ".bin";
  p.cfg.may_replace_foreign = f.overwrite;
  // A benchmark never destroys a file it did not create: checkpoint.bin may
  // replace only a checkpoint redline saved, unless the user says so.
  if (p.save && !p.own_checkpoint && !f.overwrite)
    if (const auto problem = foreign_checkpoint_problem(p.cfg.dir, p.cfg.name))
      throw UsageError("--dir", f.dir,
                       *problem + ": refusing to replace a file redline did not write (--overwrite replaces it)");
}

// Threads, chunk, fsync and rounds of the writes and reads.
void plan_io_shape(const CheckpointFlags& f, CheckpointPlan& p) {
  p.cfg.threads = static_cast<unsigned>(parse_count_between("--threads", f.threads, 1, 256));
  p.cfg.chunk = parse_size("--chunk", f.chunk);
  if (p.cfg.chunk < 4096 || p.cfg.chunk > (std::size_t{1} << 30))
    throw UsageError("--chunk", f.chunk, "must be between 4K and 1G");
  p.cfg.fsync = !f.no_fsync;
  p.cfg.rounds = static_cast<unsigned>(parse_count_between("--rounds", f.rounds, 1, 100));
}

// The job's mean time between failures: --mtbf, or --gpu-mtbf / --gpus.
void plan_failure_rate(const CheckpointFlags& f, CheckpointPlan& p) {
  if (!f.mtbf.empty() && !f.gpu_mtbf.empty())
    throw UsageError("--gpu-mtbf", f.gpu_mtbf, "give either --mtbf (the job's) or --gpu-mtbf with --gpus, not both");
  if (!f.mtbf.empty()) {
    if (!f.gpus.empty()) throw UsageError("--gpus", f.gpus, "only counts with --gpu-mtbf; --mtbf is the whole job's already");
    p.mtbf_s = hours("--mtbf", f.mtbf) * 3600;
    p.mtbf_source = "--mtbf " + f.mtbf + " h";
  } else if (!f.gpu_mtbf.empty()) {
    if (f.gpus.empty()) throw UsageError("--gpu-mtbf", f.gpu_mtbf, "needs --gpus N (the job's GPU count)");
    const auto gpus = parse_count_between("--gpus", f.gpus, 1, 1 << 24);
    // Independent failures: the job fails when any GPU does.
    p.mtbf_s = hours("--gpu-mtbf", f.gpu_mtbf) * 3600 / static_cast<double>(gpus);
    if (p.mtbf_s < kMinMtbfHours * 3600)
      throw UsageError("--gpus", f.gpus,
                       "with --gpu-mtbf " + f.gpu_mtbf + " gives a job MTBF of " + format_general(p.mtbf_s, 3) +
                           " s; the job's must be " + kMtbfRange);
    p.mtbf_source = "--gpu-mtbf " + f.gpu_mtbf + " h / " + std::to_string(gpus) + " GPUs";
  } else if (!f.gpus.empty()) {
    throw UsageError("--gpus", f.gpus, "only counts with --gpu-mtbf");
  }
}

// The state and one copy (snapshot / restore target) live in host memory.
void check_host_memory(const CheckpointFlags& f, const CheckpointPlan& p) {
  const double physical = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (p.save && physical > 0 && 2.0 * static_cast<double>(p.cfg.bytes) > 0.9 * physical) {
    const auto [flag, value] = size_flag(f);
    // 2 x bytes cannot wrap: a state is at most kMaxCheckpointStateBytes (2^60).
    throw UsageError(flag, value,
                     "needs twice the state (" + format_size(2 * p.cfg.bytes) + ") in host memory; this machine has " +
                         format_size(static_cast<std::uint64_t>(physical)));
  }
}

}  // namespace

CheckpointPlan to_plan(const CheckpointFlags& f) {
  CheckpointPlan p;
  plan_command(f.command, p);
  refuse_flags_the_command_ignores(f);
  plan_state_size(f, p);
  plan_storage(f, p);
  plan_io_shape(f, p);
  plan_failure_rate(f, p);
  check_host_memory(f, p);
  return p;
}

}  // namespace redline
