// allreduce_bench: collective bus bandwidth, with nccl-tests' flags and table,
// machine-readable reports, acceptance (--expect-busbw) and bad-node
// diagnosis (--per-rank, --split). Launch with mpirun/srun or torchrun-style
// environment variables; one process per GPU (or -g GPUs per process).
//
// bench/allreduce/: flags.cpp reads the flags into a plan, backend_choice.cpp
// picks and makes the backend, run.cpp runs the ranks under the watchdog,
// reports.cpp writes rank 0's files and the exit status, bootstrap.cpp
// finds how the ranks meet. This file: which rank prints a usage error.
#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>

#include "bench/allreduce/bootstrap.hpp"
#include "bench/allreduce/flags.hpp"
#include "bench/allreduce/run.hpp"
#include "bench/tool_columns.hpp"
#include "collectives/bootstrap/bootstrap.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/schema_document.hpp"
#include "harness/report/tool_main.hpp"

using namespace redline;
using namespace redline::allreduce;

namespace {

// Which rank this process is, as its launcher says (before any rank is met).
int launch_rank() {
  try {
    return detect_launch().rank;
  } catch (const std::runtime_error&) {
    return 0;  // a malformed launcher variable: every rank says so
  }
}

// Every rank parses the same flags and reaches the same verdict: only rank 0
// prints a usage error, the others end with the same status quietly (CLI11's
// own parse errors are printed by run_tool, so their stderr is muted until
// then). mpirun kills the job once a rank exits non-zero, so rank 0 prints
// while the bootstrap lives (the others leave after it, from MPI_Finalize);
// before the ranks meet, the others give it a moment.
class UsageErrorsOnRankZero {
 public:
  UsageErrorsOnRankZero() : rank_(launch_rank()) {
    if (rank_ != 0) saved_ = std::cerr.rdbuf(nullptr);
  }
  ~UsageErrorsOnRankZero() { unmute(); }
  void unmute() {
    if (!saved_) return;
    std::cerr.rdbuf(saved_);
    std::cerr.clear();
    saved_ = nullptr;
  }
  int run(const std::function<int()>& body) {
    unmute();
    try {
      return body();
    } catch (const UsageError& e) {
      if (rank_ == 0) std::cerr << kTool << ": " << e.what() << "\n" << std::flush;
      return kExitUsage;
    }
  }
  // The status to exit with, once rank 0 had a moment to say why (quietly:
  // mpirun may end this rank with a SIGTERM once rank 0 has left).
  int exit_status(int status) const {
    if (status != kExitUsage || rank_ == 0 || met_) return status;
    install_interrupt_handlers(InterruptNotice::quiet);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    return status;
  }
  // The ranks have met: this is the bootstrap's rank.
  void set_rank(int rank) {
    rank_ = rank;
    met_ = true;
  }

 private:
  int rank_;
  bool met_ = false;
  std::streambuf* saved_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{
      "Collective bus bandwidth, nccl-tests compatible: the same flags, table and figures, plus CSV/JSON, "
      "acceptance (--expect-busbw) and bad-node diagnosis (--per-rank, --split). Launch one process per GPU "
      "with mpirun/srun, or torchrun-style (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).",
      kTool};
  app.footer(columns_help(tool_declaration(kTool)));
  add_flags(app, f);
  UsageErrorsOnRankZero usage;
  return usage.exit_status(run_tool(app, argc, argv, [&] {
    return usage.run([&] {
      Plan plan = read_flags(f);
      const std::unique_ptr<Bootstrap> bootstrap = make_bootstrap(f.bootstrap, plan.backend, f.backend, &argc, &argv);
      usage.set_rank(bootstrap->rank());
      return usage.run([&] { return run_ranks(f, plan, *bootstrap); });
    });
  }));
}
