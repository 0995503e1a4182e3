// allreduce_bench: collective bus bandwidth, with nccl-tests' flags and table,
// machine-readable reports, acceptance (--expect-busbw) and bad-node
// diagnosis (--per-rank, --split). Launch with mpirun/srun or torchrun-style
// environment variables; one process per GPU (or -g GPUs per process).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "bench/allreduce_bootstrap.hpp"
#include "collectives/collective_sweep.hpp"
#include "collectives/injected_faults.hpp"
#include "harness/core/environment.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/tool_main.hpp"
#include "harness/tracking/sweep_charts.hpp"
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

constexpr const char* kTool = "allreduce_bench";

struct Flags {
  std::string minbytes = "32M", maxbytes = "32M", stepbytes = "1M", stepfactor;
  std::string threads = "1", gpus = "1", check = "1", iters = "20", warmup = "5", agg = "1", average = "1";
  std::string datatype = "float", op = "sum", root = "0", blocking = "0", graphs = "0";
  std::string collective = "all_reduce", backend = "auto", bootstrap = "auto", split = "none", outlier = "10";
  std::string expect_busbw, timeout = "600";
  FaultFlags faults;
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

// nccl-tests' -b/-e with a factor (-f) or a fixed step (-i); at most 10000
// sizes, counted before any is generated.
std::vector<std::size_t> parse_sizes(const Flags& f) {
  constexpr double kMaxSizes = 10000;
  const auto min_bytes = parse_size("-b", f.minbytes), max_bytes = parse_size("-e", f.maxbytes);
  if (min_bytes < 1) throw UsageError("-b", f.minbytes, "must be at least 1 byte");
  if (max_bytes < min_bytes) throw UsageError("-e", f.maxbytes, "must be at least -b (" + f.minbytes + ")");
  std::vector<std::size_t> sizes;
  if (!f.stepfactor.empty()) {
    const double factor = parse_number("-f", f.stepfactor);
    if (!(factor > 1)) throw UsageError("-f", f.stepfactor, "must be greater than 1");
    if (std::log(static_cast<double>(max_bytes) / static_cast<double>(min_bytes)) / std::log(factor) > kMaxSizes)
      throw UsageError("-f", f.stepfactor, "gives more than 10000 sizes between -b " + f.minbytes + " and -e " +
                                               f.maxbytes);
    for (double size = static_cast<double>(min_bytes); size <= static_cast<double>(max_bytes); size *= factor)
      sizes.push_back(static_cast<std::size_t>(size));
    return sizes;
  }
  const auto step = parse_size("-i", f.stepbytes);
  if (step < 1) throw UsageError("-i", f.stepbytes, "must be at least 1 byte");
  if (static_cast<double>(max_bytes - min_bytes) / static_cast<double>(step) > kMaxSizes)
    throw UsageError("-e", f.maxbytes,
                     "gives more than 10000 sizes from -b " + f.minbytes + " in steps of -i " + f.stepbytes +
                         "; raise -i or step by a factor with -f");
  for (auto size = min_bytes; size <= max_bytes; size += step) sizes.push_back(size);
  return sizes;
}

// A list of names ("a,b"), each read by `parse` (nullopt when unknown). A
// name it does not know is refused with the `kind` and the choices.
template <typename T, typename Parse>
std::vector<T> parse_names(const char* flag, const std::string& text, const char* kind, const char* choices,
                           Parse parse) {
  std::vector<T> items;
  for (const auto& name : split_list(text)) {
    const std::optional<T> item = parse(name);
    if (!item) throw UsageError(flag, text, std::string("unknown ") + kind + " '" + name + "'; use " + choices);
    // A name given twice is one case (its rows would share a case key).
    if (std::find(items.begin(), items.end(), *item) == items.end()) items.push_back(*item);
  }
  return items;
}

std::vector<const Collective*> parse_collectives(const std::string& text) {
  std::vector<const Collective*> collectives;
  if (text == "all") {
    for (const auto& c : all_collectives()) collectives.push_back(c.get());
    return collectives;
  }
  return parse_names<const Collective*>(
      "--collective", text, "collective",
      "all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv or all",
      [](const std::string& name) -> std::optional<const Collective*> {
        if (const Collective* c = find_collective(name)) return c;
        return std::nullopt;
      });
}

std::vector<DataType> parse_types(const std::string& text) {
  if (text == "all") return all_data_types();
  return parse_names<DataType>("-d", text, "type", "int8, int32, half, bfloat16, float, double, f8e4m3, f8e5m2 or all",
                               parse_data_type);
}

std::vector<ReduceOp> parse_ops(const std::string& text) {
  if (text == "all") return all_reduce_ops();
  return parse_names<ReduceOp>("-o", text, "op", "sum, prod, max, min, avg or all", parse_reduce_op);
}

PointSettings parse_point(const Flags& f) {
  PointSettings point;
  point.iterations = count_in("-n", f.iters, 1, 1 << 24);
  point.warmup_iterations = count_in("-w", f.warmup, 0, 1 << 24);
  point.check_iterations = count_in("-c", f.check, 0, 1 << 20);
  point.graph_replays = count_in("-G", f.graphs, 0, 1 << 24);
  point.per_iteration = f.per_iter;
  if (point.graph_replays > 0 && point.per_iteration)
    throw UsageError("-G", f.graphs, "--per-iter times single operations; it cannot time graph replays");
  return point;
}

CollectiveSweepOptions to_options(const Flags& f) {
  CollectiveSweepOptions o;
  o.tool = kTool;
  o.sizes = parse_sizes(f);
  o.collectives = parse_collectives(f.collective);
  o.types = parse_types(f.datatype);
  o.ops = parse_ops(f.op);
  // nccl-tests' -r -1 is every root, as -r all.
  if (f.root != "all" && f.root != "-1") o.roots = {count_in("-r", f.root, 0, 1 << 24)};
  o.point = parse_point(f);
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
  else if (f.split == "auto") o.split = SplitMode::automatic;
  else if (f.split != "none") throw UsageError("--split", f.split, "use none, node, pairs or auto");
  o.timeout_seconds = parse_number("--timeout", f.timeout);
  require_in_range("--timeout", f.timeout, o.timeout_seconds, 0, 1e9);
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

// Everything the flags decide before any rank meets another: every rank
// reads the same flags, so every rank reaches the same verdict here.
struct Plan {
  CollectiveSweepOptions options;
  FaultPlan faults;
  std::string backend;  // nccl or host
  int gpus = 1;
  bool blocking = false;
};

Plan read_flags(const Flags& f) {
  Plan plan;
  plan.options = to_options(f);
  plan.faults = parse_fault_flags(f.faults);
  if (!f.per_rank_csv.empty() && !f.per_rank)
    throw UsageError("--per-rank-csv", f.per_rank_csv, "needs --per-rank (the arrival pass)");
  count_in("-t", f.threads, 1, 1);
  count_in("-m", f.agg, 1, 1);
  // -g all: one process drives every visible GPU (a one-line suite entry for a whole node).
  plan.gpus = f.gpus == "all" ? std::max(1, visible_gpus()) : count_in("-g", f.gpus, 1, 64);
  plan.blocking = count_in("-z", f.blocking, 0, 1) == 1;
  plan.backend = resolve_backend(f.backend);
  // --split auto compares one figure per group and size: these would be ignored.
  if (plan.options.split == SplitMode::automatic && (f.per_rank || f.per_iter || plan.options.point.graph_replays > 0))
    throw UsageError("--split", "auto", "measures one time per group and size; drop --per-rank, --per-iter and -G");
  if (plan.options.point.graph_replays > 0 && plan.backend == "host")
    throw UsageError("-G", f.graphs, "CUDA graphs need the nccl backend (no GPU is visible here)");
  return plan;
}

// Only rank 0 writes the reports, so only its file system is asked whether
// they can be written; every rank learns the verdict and throws alike.
void check_outputs_on_rank0(Bootstrap& bootstrap, const Flags& f) {
  char problem[1024] = {};
  if (bootstrap.rank() == 0) try {
      validate_output_paths(f.output);
      validate_output_path("--per-rank-csv", f.per_rank_csv);
      refuse_one_file_for_two("--csv", f.output.csv_path, "--per-rank-csv", f.per_rank_csv);
      refuse_one_file_for_two("--json", f.output.json_path, "--per-rank-csv", f.per_rank_csv);
    } catch (const UsageError& e) {
      std::snprintf(problem, sizeof problem, "%s", e.what());
    }
  bootstrap.broadcast(problem, sizeof problem, 0);
  if (problem[0] != '\0') throw UsageError(problem);
}

void check_roots(const CollectiveSweepOptions& options, const Backend& backend, const std::string& root_flag) {
  const bool rooted = std::any_of(options.collectives.begin(), options.collectives.end(),
                                  [](const Collective* c) { return c->uses_root(); });
  for (int root : options.roots)
    if (rooted && root >= backend.size())
      throw UsageError("-r", root_flag, "there are only " + std::to_string(backend.size()) + " ranks");
}

bool writes_files(const Flags& f) {
  return !f.output.csv_path.empty() || !f.output.json_path.empty() || !f.per_rank_csv.empty();
}

std::string files_named(const Flags& f) {
  std::string files;
  for (const std::string* path : {&f.output.csv_path, &f.output.json_path, &f.per_rank_csv})
    if (!path->empty()) files += (files.empty() ? "" : ", ") + *path;
  return files;
}

// Rank 0's files: the report (its table was the console's), and the
// --per-rank-csv companion.
SweepRecord::Save save_to_files(const Flags& f) {
  return [&f](const Report& report, const Report& per_rank) {
    OutputOptions output = f.output;
    output.quiet = true;
    Report charted = report;
    add_sweep_charts(charted);  // for its JSON, as `redline report` draws them
    write_reports(charted, output);
    if (!f.per_rank_csv.empty()) write_reports(per_rank, OutputOptions{f.per_rank_csv, "", true});
  };
}

// The run failed (a rank died, hung or froze, or an operation failed): rank 0
// saves what was measured and an error row naming the rank and the point,
// before the run is aborted. It says so once, and only when it saves (the
// watchdog thread and the main thread may both get here).
void save_after_failure(const Flags& f, SweepRecord& record, const std::string& what) {
  const auto announce = [&f](std::size_t rows) {
    std::cerr << kTool << ": rank 0: saving what was measured so far (" << rows << " results and an error row) to "
              << files_named(f) << "\n"
              << std::flush;
  };
  try {
    record.save_after_failure(what, announce);
  } catch (const std::exception& e) {
    std::cerr << kTool << ": rank 0: could not save: " << e.what() << "\n" << std::flush;
  }
}

// Rank 0 writes the report; with --quiet, what failed still reaches stderr.
// The exit status, the same on every rank.
int finish(const Flags& f, Bootstrap& bootstrap, SweepRecord& record, const CollectiveSweepResult& result) {
  if (bootstrap.rank() == 0) {
    // With several ranks the handlers were quiet (InterruptNotice::quiet).
    if (result.interrupted && bootstrap.size() > 1 && writes_files(f))
      std::cerr << "interrupted: saving what was measured so far\n" << std::flush;
    record.save();
    if (f.output.quiet) {
      std::set<std::string> failures;  // "nothing was measured" is both a result and an acceptance
      for (const auto& [what, text] : record.report().summary)
        if (text.rfind("FAILED", 0) == 0 && failures.insert(text).second) std::cerr << kTool << ": " << text << "\n";
      if (result.wrong > 0) std::cerr << kTool << ": " << result.wrong << " wrong values (the CSV's wrong column)\n";
    }
  }
  if (result.interrupted) return 128 + (interrupt_signal() ? interrupt_signal() : 2);
  return result.wrong > 0 || result.below_expectation || result.nothing_measured || result.named_culprit
             ? kExitCheckFailed
             : kExitOk;
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

// Everything after the ranks have met. A usage error here comes from the
// same flags and the same gathered facts on every rank, so every rank raises
// it at the same place and ends normally (only rank 0 prints it). Any other
// failure is this rank's alone: it must not leave the others waiting in a
// collective, so the run is aborted, after rank 0 saved what it measured.
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

void add_flags(CLI::App& app, Flags& f) {
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
                 "With --per-rank: every rank's arrival per size (rank, rank_host, late_us, inside_us) as CSV")
      ->type_name("FILE");
  app.add_option("--split", f.split,
                 "auto: rounds that end with the slow node or link named; node: inside every node at once; pairs: "
                 "across pairs of nodes; none");
  app.add_option("--outlier", f.outlier, "PCT below the median that marks a slow group or a straggler; default 10");
  app.add_option("--expect-busbw", f.expect_busbw, "Exit 1 with FAILED when the peak busbw is below GBPS")->type_name("GBPS");
  app.add_option("-T,--timeout", f.timeout, "Abort when a size has not finished in S seconds (0: never); default 600");
  // Test-only faults (injected_faults.hpp), hidden from --help.
  app.add_option("--inject-delay", f.faults.delay)->group("");
  app.add_option("--inject-hang", f.faults.hang)->group("");
  app.add_option("--inject-exit", f.faults.exit)->group("");
  app.add_option("--inject-signal", f.faults.signal)->group("");
  app.add_flag("--inject-stuck-abort", f.faults.stuck_abort)->group("");
  app.add_option("--inject-wrong", f.faults.wrong)->group("");
  add_output_flags(app, f.output);
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{
      "Collective bus bandwidth, nccl-tests compatible: the same flags, table and figures, plus CSV/JSON, "
      "acceptance (--expect-busbw) and bad-node diagnosis (--per-rank, --split). Launch one process per GPU "
      "with mpirun/srun, or torchrun-style (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).",
      kTool};
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
