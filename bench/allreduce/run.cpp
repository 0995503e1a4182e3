#include "bench/allreduce/run.hpp"

#include <algorithm>
#include <iostream>
#include <memory>
#include <ostream>

#include "bench/allreduce/backend_choice.hpp"
#include "bench/allreduce/reports.hpp"
#include "collectives/sweep/collective_sweep.hpp"
#include "collectives/faults/injected_faults.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/tool_main.hpp"

namespace redline::allreduce {
namespace {

void check_roots(const CollectiveSweepOptions& options, const Backend& backend, const std::string& root_flag) {
  const bool rooted = std::any_of(options.collectives.begin(), options.collectives.end(),
                                  [](const Collective* c) { return c->uses_root(); });
  for (int root : options.roots)
    if (rooted && root >= backend.size())
      throw UsageError("-r", root_flag, "there are only " + std::to_string(backend.size()) + " ranks");
}

// From communicator init to the last size, on every rank, under the watchdog.
int measure(const Flags& f, Plan& plan, Bootstrap& bootstrap, SweepRecord& record, Environment env) {
  const std::vector<std::string> hosts = gather_host_names(bootstrap);
  const auto injected = plan.faults.any() ? make_injected_faults(plan.faults, bootstrap.rank()) : nullptr;
  FaultHooks& faults = injected ? *injected : no_faults();
  // Watching from before communicator init: a rank that never joins it
  // (NCCL init blocks in every other rank) is named and the run aborted,
  // instead of waiting for the launcher's limit.
  Watchdog watchdog(bootstrap, kTool, plan.options.timeout_seconds, hosts, faults);
  watchdog.set_on_failure([&](const std::string& what) { save_after_failure(f, record, what); });
  int status = kExitCheckFailed;
  try {
    faults.before_stage(RunStage::init);
    watchdog.enter("communicator init (--backend " + plan.backend + ")");
    std::unique_ptr<Backend> backend = make_backend(plan.backend, bootstrap, plan.gpus, plan.blocking, env);
    watchdog.leave();
    record.set_environment(std::move(env));
    // Taken back before the communicator goes, whichever way this block is left.
    const ScopedAbortOperations abort_backend(watchdog, [&backend] { backend->abort(); });
    check_roots(plan.options, *backend, f.root);

    // --quiet: the table and its summary go nowhere (a stream without a
    // buffer discards what it is given); the files and the exit status carry
    // the result, and what failed still reaches stderr.
    std::ostream discard(nullptr);
    SweepServices services{bootstrap, *backend, watchdog, faults, record, f.output.quiet ? discard : std::cout, hosts};
    status = finish(f, bootstrap, record, run_collective_sweep(plan.options, services));
  } catch (const UsageError&) {
    watchdog.finish();  // every rank meets it alike and ends normally: not a death
    throw;
  } catch (const CannotRun&) {
    watchdog.finish();
    throw;
  }
  bootstrap.barrier();
  return status;
}

}  // namespace

int run_ranks(const Flags& f, Plan& plan, Bootstrap& bootstrap) {
  if (bootstrap.size() > 1) install_interrupt_handlers(InterruptNotice::quiet);
  Environment env = capture_environment();
  env.mpi_library = bootstrap.mpi_library();
  SweepRecord record(start_report(kTool, env));
  // Rank 0 writes the files; where none is asked for, the table was the report.
  if (bootstrap.rank() == 0 && writes_files(f)) record.set_save(save_to_files(f));
  try {
    if (f.backend == "auto") agree_on_backend(bootstrap, plan.backend);
    check_outputs_on_rank0(bootstrap, f);
    return measure(f, plan, bootstrap, record, std::move(env));
  } catch (const UsageError&) {
    throw;
  } catch (const CannotRun&) {
    throw;  // every rank reaches the same verdict (the backend exchanges it)
  } catch (const std::exception& e) {
    if (bootstrap.size() == 1) throw;
    const std::string what = "rank " + std::to_string(bootstrap.rank()) + ": error: " + e.what();
    std::cerr << std::string(kTool) + ": " + what + "\n" << std::flush;  // one write: ranks print at once
    save_after_failure(f, record, what);
    bootstrap.abort_all(kExitCheckFailed);
  }
  return kExitCheckFailed;  // not reached: abort_all ends the process
}

}  // namespace redline::allreduce
