// allreduce_bench: collective bus bandwidth, with nccl-tests' flags and table,
// machine-readable reports, acceptance (--expect-busbw) and bad-node
// diagnosis (--per-rank, --split). Launch with mpirun/srun or torchrun-style
// environment variables; one process per GPU (or -g GPUs per process).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "collectives/collective_sweep.hpp"
#include "collectives/env_bootstrap.hpp"
#include "collectives/single_bootstrap.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/report/tool_main.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#ifdef REDLINE_HAVE_MPI
#include "collectives/host_backend.hpp"
#endif
#ifdef REDLINE_HAVE_NCCL_BACKEND
#include "collectives/nccl_backend.hpp"
#include "kernels/device_query.cuh"
#include "kernels/gpu_availability.cuh"
#endif

using namespace redline;

namespace {

struct Flags {
  std::string minbytes = "32M", maxbytes = "32M", stepbytes = "1M", stepfactor;
  std::string threads = "1", gpus = "1", check = "1", iters = "20", warmup = "5", agg = "1", average = "1";
  std::string datatype = "float", op = "sum", root = "0", blocking = "0", graphs = "0";
  std::string collective = "all_reduce", backend = "auto", bootstrap = "auto", split = "none", outlier = "10";
  std::string expect_busbw, timeout = "600";
  std::string inject_delay, inject_hang, inject_exit, inject_wrong;
  bool inject_stuck_abort = false;
  bool per_iter = false, per_rank = false;
  std::string per_rank_csv;
  OutputOptions output;
};

// "a,b" -> {a, b}. Empty items are kept ("" -> {""}, "a," -> {a, ""}), so
// the caller refuses them by name instead of running nothing.
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) items.push_back(item);
  if (text.empty() || text.back() == ',') items.emplace_back();
  return items;
}

int count_in(const char* flag, const std::string& text, int lo, int hi) {
  return static_cast<int>(parse_count_between(flag, text, lo, hi));
}

// "RANK:VALUE" for the hidden fault-injection flags.
std::pair<int, std::string> rank_and_value(const char* flag, const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) throw UsageError(flag, text, "expected RANK:VALUE");
  return {count_in(flag, text.substr(0, colon), 0, 1 << 20), text.substr(colon + 1)};
}

CollectiveSweepOptions to_options(const Flags& f) {
  CollectiveSweepOptions o;
  // Sizes: nccl-tests' -b/-e with a factor (-f) or a fixed step (-i).
  const auto min_bytes = parse_size("-b", f.minbytes), max_bytes = parse_size("-e", f.maxbytes);
  if (min_bytes < 1) throw UsageError("-b", f.minbytes, "must be at least 1 byte");
  if (max_bytes < min_bytes) throw UsageError("-e", f.maxbytes, "must be at least -b (" + f.minbytes + ")");
  // At most this many sizes, counted before any is generated.
  constexpr double kMaxSizes = 10000;
  if (!f.stepfactor.empty()) {
    const double factor = parse_number("-f", f.stepfactor);
    if (!(factor > 1)) throw UsageError("-f", f.stepfactor, "must be greater than 1");
    if (std::log(static_cast<double>(max_bytes) / static_cast<double>(min_bytes)) / std::log(factor) > kMaxSizes)
      throw UsageError("-f", f.stepfactor, "gives more than 10000 sizes between -b " + f.minbytes + " and -e " +
                                               f.maxbytes);
    for (double size = static_cast<double>(min_bytes); size <= static_cast<double>(max_bytes); size *= factor)
      o.sizes.push_back(static_cast<std::size_t>(size));
  } else {
    const auto step = parse_size("-i", f.stepbytes);
    if (step < 1) throw UsageError("-i", f.stepbytes, "must be at least 1 byte");
    if (static_cast<double>(max_bytes - min_bytes) / static_cast<double>(step) > kMaxSizes)
      throw UsageError("-e", f.maxbytes, "gives more than 10000 sizes from -b " + f.minbytes + " in steps of -i " +
                                             f.stepbytes + "; raise -i or step by a factor with -f");
    for (auto size = min_bytes; size <= max_bytes; size += step) o.sizes.push_back(size);
  }

  if (f.collective == "all") {
    for (const auto& c : all_collectives()) o.collectives.push_back(c.get());
  } else {
    for (const auto& name : split_list(f.collective)) {
      const Collective* c = find_collective(name);
      if (!c)
        throw UsageError("--collective", f.collective,
                         "unknown collective '" + name + "'; use all_reduce, all_gather, reduce_scatter, broadcast, "
                         "reduce, alltoall, sendrecv or all");
      o.collectives.push_back(c);
    }
  }
  if (f.datatype == "all") {
    o.types = all_data_types();
  } else {
    for (const auto& name : split_list(f.datatype)) {
      const auto t = parse_data_type(name);
      if (!t) throw UsageError("-d", f.datatype, "unknown type '" + name + "'; use int8, int32, half, bfloat16, float, double, f8e4m3, f8e5m2 or all");
      o.types.push_back(*t);
    }
  }
  if (f.op == "all") {
    o.ops = all_reduce_ops();
  } else {
    for (const auto& name : split_list(f.op)) {
      const auto op = parse_reduce_op(name);
      if (!op) throw UsageError("-o", f.op, "unknown op '" + name + "'; use sum, prod, max, min, avg or all");
      o.ops.push_back(*op);
    }
  }
  // nccl-tests' -r -1 is every root, as -r all.
  if (f.root != "all" && f.root != "-1") o.roots = {count_in("-r", f.root, 0, 1 << 24)};

  o.point.iterations = count_in("-n", f.iters, 1, 1 << 24);
  o.point.warmup_iterations = count_in("-w", f.warmup, 0, 1 << 24);
  o.point.check_iterations = count_in("-c", f.check, 0, 1 << 20);
  o.point.graph_replays = count_in("-G", f.graphs, 0, 1 << 24);
  o.point.per_iteration = f.per_iter;
  o.average = static_cast<AverageMode>(count_in("-a", f.average, 0, 3));
  o.per_rank = f.per_rank;
  o.outlier_pct = parse_number("--outlier", f.outlier);
  require_in_range("--outlier", f.outlier, o.outlier_pct, 0, 100);
  if (!f.expect_busbw.empty()) {
    o.expect_busbw_GBps = parse_number("--expect-busbw", f.expect_busbw);
    require_positive("--expect-busbw", f.expect_busbw, *o.expect_busbw_GBps);
  }
  if (f.split == "node") o.split = SplitMode::node;
  else if (f.split == "pairs") o.split = SplitMode::pairs;
  else if (f.split != "none") throw UsageError("--split", f.split, "use none, node or pairs");
  o.timeout_seconds = parse_number("--timeout", f.timeout);
  require_in_range("--timeout", f.timeout, o.timeout_seconds, 0, 1e9);

  if (!f.inject_delay.empty()) {
    const auto [rank, ms] = rank_and_value("--inject-delay", f.inject_delay);
    o.faults.delay_rank = rank;
    o.faults.delay_ms = parse_number("--inject-delay", ms);
  }
  if (!f.inject_hang.empty()) {
    const auto [rank, where] = rank_and_value("--inject-hang", f.inject_hang);
    o.faults.hang_rank = rank;
    if (where == "init" || where == "split" || where == "warmup")
      o.faults.hang_at = where;
    else
      o.faults.hang_bytes = parse_size("--inject-hang", where);
  }
  o.faults.stuck_abort = f.inject_stuck_abort;
  if (!f.inject_wrong.empty()) o.faults.wrong_rank = count_in("--inject-wrong", f.inject_wrong, 0, 1 << 20);
  if (!f.inject_exit.empty()) {
    const auto [rank, bytes] = rank_and_value("--inject-exit", f.inject_exit);
    o.faults.exit_rank = rank;
    o.faults.exit_bytes = parse_size("--inject-exit", bytes);
  }
  return o;
}

int visible_gpus() {
#ifdef REDLINE_HAVE_NCCL_BACKEND
  return visible_gpu_count();
#else
  return 0;
#endif
}

// Creates no CUDA context: the NCCL backend probes the GPU each rank will use.
bool gpu_visible() {
#ifdef REDLINE_HAVE_NCCL_BACKEND
  return visible_gpu_count() > 0;
#else
  return false;
#endif
}

// MPI when an MPI launcher (or srun) started us, the TCP rendezvous for
// torchrun-style variables, else a single process. Never runs ranks alone.
// `backend` is the resolved backend, `backend_flag` what --backend said.
std::unique_ptr<Bootstrap> make_bootstrap(const std::string& choice, const std::string& backend,
                                          const std::string& backend_flag, int* argc, char*** argv) {
  LaunchInfo launch;
  try {
    launch = detect_launch();
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());  // a malformed launcher variable is bad input
  }
  const bool env_launch = launch.launcher == "torchrun-style env";
  if (env_launch && backend == "host" && (choice == "auto" || choice == "env"))
    throw UsageError("--backend", backend_flag,
                     std::string(backend_flag == "auto" ? "picked host (no GPU is visible); " : "") +
                         "the host backend runs MPI collectives: launch with mpirun or srun, not torchrun-style "
                         "variables");
  std::string kind = choice;
  if (kind == "auto") {
    if (launch.world_size > 1 && !env_launch) kind = "mpi";
    else if (env_launch) kind = "env";
    else kind = backend == "host" ? "mpi" : "single";
  }
  if (kind == "mpi") {
#ifdef REDLINE_HAVE_MPI
    return make_mpi_bootstrap(argc, argv);
#else
    (void)argc;
    (void)argv;
    throw UsageError("--bootstrap", choice,
                     "launched by " + launch.launcher + " with " + std::to_string(launch.world_size) +
                         " ranks, but this allreduce_bench was built without MPI; rebuild with MPI (libopenmpi-dev) "
                         "or launch torchrun-style (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)");
#endif
  }
  if (kind == "env") return make_env_bootstrap();
  if (kind == "single") {
    if (launch.world_size > 1)
      throw UsageError("--bootstrap", choice,
                       "launched by " + launch.launcher + " with " + std::to_string(launch.world_size) +
                           " ranks: a single-process bootstrap would run every rank alone");
    return make_single_bootstrap();
  }
  throw UsageError("--bootstrap", choice, "use auto, mpi, env or single");
}

// --backend auto: nccl when a GPU is visible, else host.
std::string resolve_backend(const std::string& choice) {
  if (choice == "auto") return gpu_visible() ? "nccl" : "host";
  if (choice != "nccl" && choice != "host") throw UsageError("--backend", choice, "use auto, nccl or host");
  return choice;
}

// --backend auto is decided per rank; a node whose GPUs are gone (a dead
// driver) would pick host while the others pick nccl and make different
// calls. Every rank checks that all agree, and the run stops naming the odd ones.
void agree_on_backend(Bootstrap& bootstrap, const std::string& kind) {
  char mine[64] = {};
  std::snprintf(mine, sizeof mine, "%s", kind.c_str());
  const std::vector<char> all = bootstrap.all_gather(mine, sizeof mine);
  std::string odd;
  for (int r = 0; r < bootstrap.size(); ++r)
    if (kind != std::string(all.data() + static_cast<std::size_t>(r) * sizeof mine))
      odd += (odd.empty() ? "" : ", ") + std::to_string(r) + " (" + std::string(all.data() + r * sizeof mine) + ")";
  if (!odd.empty())
    throw UsageError("--backend", "auto",
                     "ranks disagree: this rank (" + std::to_string(bootstrap.rank()) + ") chose " + kind +
                         " but ranks " + odd + " did not; a node without a usable GPU? pick --backend explicitly");
}

std::unique_ptr<Backend> make_backend(const std::string& kind, Bootstrap& bootstrap, int gpus, bool blocking,
                                      Environment& env) {
  if (kind == "nccl") {
#ifdef REDLINE_HAVE_NCCL_BACKEND
    // NCCL_COMM_BLOCKING overrides the blocking config the backend asks for,
    // and a non-blocking communicator lets wait() find idle streams before
    // the operations are enqueued: the run forces blocking and says so.
    if (const char* value = std::getenv("NCCL_COMM_BLOCKING"); value != nullptr && std::string(value) != "1") {
      if (bootstrap.rank() == 0)
        std::cerr << "allreduce_bench: NCCL_COMM_BLOCKING=" << value
                  << " set to 1: the timing needs blocking communicators (as nccl-tests creates)\n";
      env.variables["NCCL_COMM_BLOCKING"] = std::string("1 (was ") + value + ")";
      ::setenv("NCCL_COMM_BLOCKING", "1", 1);
    }
    try {
      auto backend = make_nccl_backend(bootstrap, gpus, blocking);
      add_cuda_gpu_info(env);
      env.nccl_version = nccl_version_string();
      return backend;
    } catch (const NoUsableGpuError& e) {
      throw CannotRun(std::string("--backend nccl: ") + e.what());
    } catch (const GpuMappingError& e) {
      throw UsageError(e.what());  // a launch mistake: too many ranks for the GPUs
    }
#else
    (void)bootstrap;
    (void)gpus;
    (void)blocking;
    (void)env;
    throw CannotRun("--backend nccl: this build has no CUDA and NCCL");
#endif
  }
  {
    if (gpus != 1) throw UsageError("-g", std::to_string(gpus), "--backend host drives no GPUs; use -g 1");
#ifdef REDLINE_HAVE_MPI
    if (bootstrap.kind() != "mpi")
      throw UsageError("--backend", kind,
                       "the host backend runs MPI collectives and needs the MPI bootstrap (mpirun or srun)");
    return make_host_backend(bootstrap);
#else
    throw CannotRun("--backend host: this build has no MPI (and there is no usable GPU for nccl)");
#endif
  }
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"Collective bus bandwidth, nccl-tests compatible: the same flags, table and figures, plus CSV/JSON, "
               "acceptance (--expect-busbw) and bad-node diagnosis (--per-rank, --split). Launch one process per GPU "
               "with mpirun/srun, or torchrun-style (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).",
               "allreduce_bench"};
  app.add_option("-b,--minbytes", f.minbytes, "Smallest size, bytes (8, 4K, 64M, 8G); default 32M");
  app.add_option("-e,--maxbytes", f.maxbytes, "Largest size; default 32M");
  app.add_option("-i,--stepbytes", f.stepbytes, "Fixed increment between sizes; default 1M");
  app.add_option("-f,--stepfactor", f.stepfactor, "Multiplication factor between sizes (overrides -i)");
  app.add_option("-t,--nthreads", f.threads, "Threads per process (only 1)");
  app.add_option("-g,--ngpus", f.gpus, "GPUs driven by each process, or all; default 1");
  app.add_option("-c,--check", f.check, "Checked iterations per size (0: no check); default 1");
  app.add_option("-n,--iters", f.iters, "Timed iterations per size; default 20");
  app.add_option("-w,--warmup_iters", f.warmup, "Warm-up iterations: at every size (doubling) before a series is timed, as nccl-tests, and again per size; default 5");
  app.add_option("-m,--agg_iters", f.agg, "Operations aggregated per iteration (only 1)");
  app.add_option("-a,--average", f.average, "Combine ranks' times: 0 rank 0, 1 average, 2 min, 3 max; default 1");
  app.add_option("-d,--datatype", f.datatype, "int8 int32 half bfloat16 float double f8e4m3 f8e5m2, a list, or all");
  app.add_option("-o,--op", f.op, "sum prod max min avg, a list, or all; default sum");
  app.add_option("-r,--root", f.root, "Root rank for broadcast and reduce, or all (-1, as in nccl-tests); default 0");
  app.add_option("-z,--blocking", f.blocking, "1: wait for each operation before issuing the next; default 0");
  app.add_option("-G,--cudagraph", f.graphs, "Capture the iterations as a CUDA graph and replay it N times");
  app.add_option("--collective", f.collective, "all_reduce (default), all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv, a list, or all");
  app.add_option("--backend", f.backend, "nccl (GPU), host (MPI on host memory) or auto (nccl when a GPU is visible)");
  app.add_option("--bootstrap", f.bootstrap, "mpi, env (torchrun-style TCP rendezvous), single, or auto");
  app.add_flag("--per-iter", f.per_iter, "Time each operation: p50, p99, max and CV per size");
  app.add_flag("--per-rank", f.per_rank, "Per size, the ranks that arrive last (stragglers) with their hosts");
  app.add_option("--per-rank-csv", f.per_rank_csv,
                 "With --per-rank: every rank's arrival per size (rank, host, late_us, inside_us) as CSV")
      ->type_name("FILE");
  app.add_option("--split", f.split, "node: run inside every node at once; pairs: across pairs of nodes; none");
  app.add_option("--outlier", f.outlier, "PCT below the median that marks a slow group or a straggler; default 10");
  app.add_option("--expect-busbw", f.expect_busbw, "Exit 1 with FAILED when the peak busbw is below GBPS")->type_name("GBPS");
  app.add_option("-T,--timeout", f.timeout, "Abort when a size has not finished in S seconds (0: never); default 600");
  app.add_option("--inject-delay", f.inject_delay)->group("");  // test-only: RANK:MS before each operation
  app.add_option("--inject-hang", f.inject_hang)->group("");    // test-only: RANK:BYTES|init|split|warmup never arrives
  app.add_option("--inject-exit", f.inject_exit)->group("");    // test-only: RANK:BYTES dies
  app.add_flag("--inject-stuck-abort", f.inject_stuck_abort)->group("");  // test-only: the abort never returns
  app.add_option("--inject-wrong", f.inject_wrong)->group("");  // test-only: RANK sends a wrong element to checks
  add_output_flags(app, f.output);

  return run_tool(app, argc, argv, [&] {
    CollectiveSweepOptions options = to_options(f);
    validate_output_paths(f.output);
    if (!f.per_rank_csv.empty()) {
      if (!f.per_rank) throw UsageError("--per-rank-csv", f.per_rank_csv, "needs --per-rank (the arrival pass)");
      validate_output_path("--per-rank-csv", f.per_rank_csv);
    }
    count_in("-t", f.threads, 1, 1);
    count_in("-m", f.agg, 1, 1);
    // -g all: one process drives every visible GPU (a one-line suite entry for a whole node).
    const int gpus = f.gpus == "all" ? std::max(1, visible_gpus()) : count_in("-g", f.gpus, 1, 64);
    const bool blocking = count_in("-z", f.blocking, 0, 1) == 1;
    const std::string backend_kind = resolve_backend(f.backend);
    if (options.point.graph_replays > 0 && backend_kind == "host")
      throw UsageError("-G", f.graphs, "CUDA graphs need the nccl backend (no GPU is visible here)");
    if (options.point.graph_replays > 0 && options.point.per_iteration)
      throw UsageError("-G", f.graphs, "--per-iter times single operations; it cannot time graph replays");
    std::unique_ptr<Bootstrap> bootstrap = make_bootstrap(f.bootstrap, backend_kind, f.backend, &argc, &argv);
    std::unique_ptr<Backend> backend;
    try {
      if (f.backend == "auto") agree_on_backend(*bootstrap, backend_kind);
      Environment env = capture_environment();
      env.mpi_library = bootstrap->mpi_library();
      const std::vector<std::string> hosts = gather_host_names(*bootstrap);
      // Watching from before communicator init: a rank that never joins it
      // (NCCL init blocks in every other rank) is named and the run aborted,
      // instead of waiting for the launcher's limit.
      Watchdog watchdog(*bootstrap, "allreduce_bench", options.timeout_seconds, hosts);
      if (options.faults.hang_at == "init" && bootstrap->rank() == options.faults.hang_rank)
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // test-only: never reaches init
      watchdog.enter("communicator init (--backend " + backend_kind + ")");
      backend = make_backend(backend_kind, *bootstrap, gpus, blocking, env);
      watchdog.leave();
      watchdog.set_abort_operations([&backend, stuck = options.faults.stuck_abort] {
        if (stuck)
          for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // test-only: an ncclCommAbort that blocks
        backend->abort();
      });
      const bool rooted = std::any_of(options.collectives.begin(), options.collectives.end(),
                                      [](const Collective* c) { return c->uses_root(); });
      for (int root : options.roots)
        if (rooted && root >= backend->size())
          throw UsageError("-r", f.root, "there are only " + std::to_string(backend->size()) + " ranks");

      // --quiet: the table and its summary go nowhere (a stream without a
      // buffer discards what it is given); the CSV, JSON and exit status carry
      // the result, and what failed still reaches stderr below.
      std::ostream discard(nullptr);
      CollectiveSweepResult result = run_collective_sweep(*bootstrap, *backend, options, std::move(env),
                                                          f.output.quiet ? discard : std::cout, hosts, watchdog);
      if (bootstrap->rank() == 0) {
        OutputOptions output = f.output;
        output.quiet = true;  // the nccl-tests table above is the console report
        write_reports(result.report, output);
        if (!f.per_rank_csv.empty()) write_reports(result.per_rank, OutputOptions{f.per_rank_csv, "", true});
        if (f.output.quiet) {
          std::set<std::string> failures;  // "nothing was measured" is both a result and an acceptance
          for (const auto& [what, text] : result.report.summary)
            if (text.rfind("FAILED", 0) == 0 && failures.insert(text).second)
              std::cerr << "allreduce_bench: " << text << "\n";
          if (result.wrong > 0) std::cerr << "allreduce_bench: " << result.wrong << " wrong values (the CSV's wrong column)\n";
        }
      }
      int status = result.wrong > 0 || result.below_expectation || result.nothing_measured ? kExitCheckFailed : kExitOk;
      if (result.interrupted) status = 128 + (interrupt_signal() ? interrupt_signal() : 2);
      watchdog.set_abort_operations({});  // the communicator goes next
      backend.reset();
      bootstrap->barrier();
      return status;
    } catch (const CannotRun&) {
      throw;  // every rank reaches the same verdict (the backend exchanges it)
    } catch (const std::exception& e) {
      // One rank's failure must not leave the others waiting in a collective.
      if (bootstrap->size() == 1) throw;
      const bool usage = dynamic_cast<const UsageError*>(&e) != nullptr;
      std::cerr << "allreduce_bench: rank " << bootstrap->rank() << ": " << (usage ? "" : "error: ") << e.what()
                << "\n" << std::flush;
      bootstrap->abort_all(usage ? kExitUsage : kExitCheckFailed);
    }
    return kExitCheckFailed;  // not reached: abort_all ends the process
  });
}
