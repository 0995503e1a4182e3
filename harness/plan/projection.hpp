// How long a data-parallel training run takes, from a micro-batch step time,
// the gradient all-reduce and the checkpoint costs. Pure arithmetic; every
// formula is in docs/plan.md:
//   plan               GBS = MBS x GA x DP (harness/measure/accumulation)
//   compute            GA x step time
//   all-reduce         grad bytes x 2(D-1)/D / busbw
//   exposed            all of it without overlap; with overlap F the backward
//                      share of the last micro-batch hides up to
//                      F x backward share x step time, never the last bucket
//   optimizer steps    ceil(samples / GBS)
//   train time         optimizer steps x (compute + exposed)
//   checkpoints        Young/Daly (harness/measure/young_daly): total =
//                      train time x (1 + overhead)
//   GPU-hours          total hours x DP (one GPU per data-parallel rank)
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "harness/measure/accumulation.hpp"
#include "harness/measure/young_daly.hpp"
#include "harness/plan/figure.hpp"

namespace redline {

// The most optimizer steps a plan projects: real runs take millions at most;
// past it the step count, a whole number, could overflow int64.
inline constexpr double kMaxOptimizerSteps = 1e12;

// What a checkpoint costs and how often the job fails, in seconds; the async
// save's snapshot and persist when they were measured.
struct CheckpointCosts {
  Figure stall_s, restore_s, mtbf_s;
  Figure snapshot_s, persist_s;  // unknown: no async figures

  bool has_async() const { return snapshot_s.known() && persist_s.known(); }
};

struct PlanInputs {
  std::int64_t micro_batch = 0;  // the largest micro-batch to use (--mbs)
  std::int64_t data_parallel = 0;
  std::int64_t global_batch = 0;  // a multiple of data_parallel
  std::string batch_source;       // where MBS, DP and GBS came from, for the output
  Figure samples;                 // the whole run: samples x epochs
  // One micro-batch step (forward, backward, optimizer) by micro-batch size,
  // ms; the entry at micro_batch is required, others are measured ones.
  std::map<std::int64_t, Figure> step_time_ms;
  Figure grad_bytes, busbw_GBps;
  double bucket_bytes = 25.0 * 1024 * 1024;  // DDP's bucket_cap_mb 25 (MiB)
  double overlap = 0;                         // share of the backward that hides communication
  double backward_share = 2.0 / 3.0;          // the backward's share of a step
  std::optional<CheckpointCosts> checkpoint;
  bool async_checkpoint = false;  // project the async save's advice instead of the sync one
};

struct StepBreakdown {
  double compute_s = 0, allreduce_s = 0;
  double hidden_s = 0;       // how much of the all-reduce the backward hides
  double last_bucket_s = 0;  // the bucket that completes with the backward: never hidden
  double exposed_s = 0, total_s = 0;
};

struct Projection {
  AccumulationPlan accumulation;
  BatchPlan plan;      // the one projected: the accumulation's exact plan
  Figure step_time_ms;     // at plan.micro_batch
  bool step_time_scaled = false;  // not measured at plan.micro_batch: scaled (step_time_at)
  double busbw_GBps = 0;   // what the all-reduce ran at
  StepBreakdown step;
  std::int64_t optimizer_steps = 0;
  double train_s = 0;  // before checkpoints
  std::optional<CheckpointAdvice> checkpoint;
  double total_s = 0;
  double gpu_hours = 0;
};

// The all-reduce's bus factor 2(D-1)/D: bytes each rank sends per byte reduced.
double allreduce_bus_factor(std::int64_t ranks);

StepBreakdown optimizer_step(double step_time_s, std::int64_t accumulation_steps, std::int64_t ranks,
                             const PlanInputs& in);

// The step time at a micro-batch: measured when step_time_ms holds it, else
// scaled from the one at in.micro_batch at constant samples per second (a
// smaller micro-batch is rarely more efficient, so this is a lower bound).
Figure step_time_at(const PlanInputs& in, std::int64_t micro_batch);

// Throws std::invalid_argument for inputs the command line should have
// refused, among them a run of more than kMaxOptimizerSteps.
Projection project(const PlanInputs& in);

}  // namespace redline
