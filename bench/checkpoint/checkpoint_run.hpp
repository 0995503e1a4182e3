// checkpoint_bench's stages as a table, run by one loop over a plan: each
// stage says what it measures, when it runs and how; a stage that fails
// becomes an error row and the run goes on.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/checkpoint/checkpoint_plan.hpp"
#include "harness/checkpoint/checkpoint_stages.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/report/report.hpp"

namespace redline {

// What the stages of one run share, and what they measured.
struct CheckpointRun {
  CheckpointPlan plan;                 // a restore alone learns cfg.bytes from the checkpoint
  std::optional<std::string> no_gpu;   // why the GPU stages are skipped
  Report report;
  AlignedBuffer state;                 // the training state a save writes
  AlignedBuffer second;                // the async snapshot, then the restore target
  std::optional<double> save_s;        // the synchronous stall
  std::optional<double> d2h_s;         // the best pinned GPU->host copy of the state
  std::optional<double> restore_s;
  std::optional<AsyncResults> async;
  bool gpu_async_failed = false;
  bool refused = false;                // the checkpoint was refused on restore
  bool failed = false;                 // a stage failed, or a copy failed its check (its row says why)
  // `all`'s own checkpoint files, removed even when a second signal ends the run.
  std::vector<std::unique_ptr<RemovedOnForcedExit>> own_files;
};

struct CheckpointStage {
  std::string_view name;      // the stage an error row names
  std::string_view measures;  // what its rows tell
  // False for a stage that only derives rows from what was measured: it
  // still runs after Ctrl-C, when no new measurement starts.
  bool measures_anew;
  bool (*wanted)(const CheckpointRun&);  // from the plan and what ran before
  void (*run)(CheckpointRun&);
};

// Every stage, in the order run_checkpoint_stages runs them.
const std::vector<CheckpointStage>& checkpoint_stages();

// Before any stage: the GPU (exit 77 for `gpu` without one), `all`'s files
// armed for removal, the report started, and the state of a save allocated
// and filled.
CheckpointRun start_run(CheckpointPlan plan);

void run_checkpoint_stages(CheckpointRun& run);

// After the stages: `all`'s own checkpoint removed, an interruption noted.
void finish_run(CheckpointRun& run);

// 128 + the signal after Ctrl-C; 1 when a stage failed or the checkpoint was
// refused; else 0.
int exit_status(const CheckpointRun& run);

}  // namespace redline
