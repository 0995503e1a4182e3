#include "bench/allreduce/flags.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "bench/allreduce/backend_choice.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/tool_main.hpp"

namespace redline::allreduce {
namespace {

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
    // -b x f^k from k = 0, each power taken afresh: multiplied up step by step,
    // rounding builds up (100 x 1.1 x 1.1 = 121.00000000000003 > -e 121, so
    // the last size was dropped). The nudge, far above pow's rounding and far
    // below a byte, keeps a size that lands on a whole number there.
    constexpr double kNudge = 1e-12;
    for (int k = 0;; ++k) {
      const double size = static_cast<double>(min_bytes) * std::pow(factor, k) * (1 + kNudge);
      if (size >= static_cast<double>(max_bytes) + 1) break;
      const auto bytes = std::min(max_bytes, static_cast<decltype(max_bytes)>(size));
      // A small factor from a small -b repeats sizes (-b 1 -f 1.3: 1 1 1 2 2 3):
      // each once, so no case gets two rows.
      if (sizes.empty() || sizes.back() != bytes) sizes.push_back(bytes);
    }
    return sizes;
  }
  const auto step = parse_size("-i", f.stepbytes);
  if (step < 1) throw UsageError("-i", f.stepbytes, "must be at least 1 byte");
  if (static_cast<double>(max_bytes - min_bytes) / static_cast<double>(step) > kMaxSizes)
    throw UsageError("-e", f.maxbytes,
                     "gives more than 10000 sizes from -b " + f.minbytes + " in steps of -i " + f.stepbytes +
                         "; raise -i or step by a factor with -f");
  // Stops before a step would pass -e, so a size near 2^64 cannot wrap around.
  for (auto size = min_bytes;; size += step) {
    sizes.push_back(size);
    if (max_bytes - size < step) break;
  }
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


}  // namespace

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

}  // namespace redline::allreduce
