// The async save: a snapshot (the only stall), then a background persist
// while a training-like load runs, and how much the persist slowed the load.
#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

#include "harness/checkpoint/checkpoint_stages.hpp"
#include "harness/core/clock.hpp"
#include "harness/core/units.hpp"

namespace redline {

namespace {

void add_async_rows(const CheckpointConfig& cfg, const AsyncResults& out, const Snapshot& snapshot,
                    const TrainingLoad& training, Report& report) {
  // Each copy thread takes one even slice of the state: that slice is its chunk.
  const std::uint64_t threads = std::max(1u, snapshot.threads);
  const auto slice = static_cast<std::size_t>(std::max<std::uint64_t>(1, (cfg.bytes + threads - 1) / threads));
  Row snap = checkpoint_stage_row("async.snapshot", cfg.bytes, snapshot.threads, slice, cfg.fsync, out.snapshot_s);
  snap.note = "the only stall: copy of the state to " + snapshot.label;
  report.rows.push_back(snap);
  Row persist_row = checkpoint_stage_row("async.persist", cfg.bytes, cfg.threads, cfg.chunk, cfg.fsync, out.persist_s);
  persist_row.note = "safe save from a background thread while the load runs";
  report.rows.push_back(persist_row);
  Row load = checkpoint_params_row("async.load", cfg.bytes, 1, cfg.chunk, cfg.fsync);
  const double slowdown = out.load_alone_per_s > 0 ? 100.0 * (1.0 - out.load_during_per_s / out.load_alone_per_s) : 0;
  load.metric("load_alone_iters_per_s", out.load_alone_per_s)
      .metric("load_during_iters_per_s", out.load_during_per_s)
      .metric("load_slowdown_pct", slowdown);
  load.note = training.description + "; alone: mean of 1 s before and 1 s after the persist";
  report.rows.push_back(load);
  report.summary.push_back({"async save", "stall " + format_number(out.snapshot_s, 3) + " s, persist " +
                                              format_number(out.persist_s, 3) + " s, load slowdown " +
                                              format_number(slowdown, 1) + "%"});
}

}  // namespace

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

AsyncResults run_async_save(const CheckpointConfig& cfg, const Snapshot& snapshot, const TrainingLoad& training,
                            Report& report) {
  AsyncResults out;
  out.load_alone_per_s = training.rate(1.0, {});
  out.snapshot_s = snapshot.copy();

  if (!cfg.may_replace_foreign) refuse_foreign_checkpoint(cfg.dir, cfg.name);
  std::atomic<bool> done{false};
  std::exception_ptr failure, load_failure;
  const WriteOptions options{.threads = cfg.threads, .chunk = cfg.chunk, .fsync = cfg.fsync, .direct = false};
  const double t0 = steady_seconds();
  // The persist times itself: the load notices `done` only after its current
  // batch (it always runs one), and that overshoot is not the persist's.
  double persist_end = t0;
  std::thread persist([&] {
    try {
      safe_save(cfg.dir, cfg.name, snapshot.data, static_cast<std::size_t>(cfg.bytes), options);
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
  add_async_rows(cfg, out, snapshot, training, report);
  return out;
}

}  // namespace redline
