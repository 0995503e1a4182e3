// allreduce_bench's flags (nccl-tests' letters and meanings) and what they
// decide before any rank meets another: every rank reads the same flags, so
// every rank reaches the same verdict here.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "collectives/sweep/collective_sweep.hpp"
#include "collectives/faults/injected_faults.hpp"
#include "harness/report/output.hpp"

namespace redline::allreduce {

inline constexpr const char* kTool = "allreduce_bench";

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

struct Plan {
  CollectiveSweepOptions options;
  FaultPlan faults;
  std::string backend;  // nccl or host
  int gpus = 1;
  bool blocking = false;
};

void add_flags(CLI::App& app, Flags& f);

// Throws UsageError naming the flag and the value.
Plan read_flags(const Flags& f);

}  // namespace redline::allreduce
