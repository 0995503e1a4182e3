// The stages of a checkpoint benchmark on the host side, each one writing report
// rows: the storage stages (a table: ceiling, raw read, buffered/fsync/O_DIRECT
// writes, writer threads x chunk size, the safe synchronous save and each of
// its safety steps), restore with verification, the async save against a
// load, and the Young/Daly frequency advice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/checkpoint/checkpoint_io.hpp"
#include "harness/checkpoint/checkpoint_rows.hpp"
#include "harness/report/report.hpp"

namespace redline {

struct StorageResults {
  double save_s = 0;       // the whole synchronous safe save (the stall): median of the rounds
};

// One storage stage: the stage its row names, what that row measures, and how
// it runs (writing its rows into the run's report).
struct StorageRun;
struct StorageStage {
  std::string_view name;
  std::string_view measures;
  void (*run)(StorageRun&);
};
// Every storage stage, in the order run_storage_stages runs them.
const std::vector<StorageStage>& storage_stages();

// Runs the storage stages in order. After Ctrl-C the stage under way
// finishes and the later ones do not start. Writes scratch files in cfg.dir
// (removed afterwards) and leaves the checkpoint cfg.name with its manifest.
StorageResults run_storage_stages(const CheckpointConfig& cfg, const std::byte* state, Report& report);

// The note of a timed read from `dir`: from storage (O_DIRECT), maybe from
// the page cache (O_DIRECT refused), or from memory (tmpfs, ramfs), whichever
// it was.
std::string read_note(const std::filesystem::path& dir, bool direct);

// Restores cfg.name into `into`. A rejected checkpoint gives a row with status
// "wrong" naming the file and std::nullopt; otherwise the restore seconds.
std::optional<double> run_restore_stage(const CheckpointConfig& cfg, AlignedBuffer& into, Report& report);

// A fixed single-thread FMA loop: the stand-in for training work when no
// GPU load is available. Returns iterations per second over `seconds`, or
// until `stop` becomes true when given (checked after each batch). At least
// one batch runs, so the rate is measured over real work even when `stop` is
// already true.
double cpu_load_rate(double seconds, const std::function<bool()>& stop = {});

// The training-like work an async save must not slow down: a rate (work
// units per second) over `seconds`, or until `stop` becomes true when given;
// at least one batch of work runs before `stop` is first asked.
struct TrainingLoad {
  std::string description;  // for the row's note: what stands in for training
  std::function<double(double seconds, const std::function<bool()>& stop)> rate;
};
// cpu_load_rate as a TrainingLoad (no GPU).
TrainingLoad cpu_training_load();

struct AsyncResults {
  double snapshot_s = 0;  // the only stall
  double persist_s = 0;
  double load_alone_per_s = 0, load_during_per_s = 0;
};

// The async save's snapshot: `copy` copies the training state into `data`
// (GPU -> pinned, or a host memcpy without a GPU) and returns its seconds.
// `label` names where it went in the row's note; `threads` is how many
// threads the copy uses (the row's threads column).
struct Snapshot {
  std::function<double()> copy;
  const std::byte* data = nullptr;
  std::string label;
  unsigned threads = 1;
};

// Async save: the snapshot, then a background thread persists its data with
// safe_save while `load` runs.
AsyncResults run_async_save(const CheckpointConfig& cfg, const Snapshot& snapshot, const TrainingLoad& load,
                            Report& report);

// Young/Daly rows (stage advice_sync / advice_async) and summary lines.
void add_checkpoint_advice(const CheckpointConfig& cfg, double mtbf_s, const std::string& mtbf_source,
                           std::optional<double> sync_save_s, std::optional<AsyncResults> async,
                           std::optional<double> restore_s, Report& report);

}  // namespace redline
