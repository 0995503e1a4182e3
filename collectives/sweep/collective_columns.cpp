#include "collectives/sweep/collective_columns.hpp"

namespace redline {

ColumnsDeclaration collective_columns() {
  return {
    .parameters =
      {{"collective", "all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, ..."},
       {"bytes", "the size column, nccl-tests' meaning"},
       {"count", "the elements each rank passes to the call, as nccl-tests prints it"},
       {"dtype", "the element type"},
       {"op", "the reduction (`none` for collectives without one)"},
       {"root", "the root rank (-1 when not rooted)"},
       {"inplace", "0/1"},
       {"group", "`--split`: the group of ranks the row ran in"},
       {"group_hosts", "`--split`: that group's hosts"},
       {"round", "`--split auto`: the diagnosis round, from 1"},
       {"stage", "`--split auto`: `inside each node`, `pairs of nodes`, `new pairs`, `a healthy group alone`, "
                 "`again, alone` (out of place only)"},
       {"rank", "`--per-rank-csv`: the rank"},
       {"rank_host", "`--per-rank-csv`: the rank's host (`host` is rank 0's, as in every row)"}},
    .metrics = {
      {.name = "time_us", .unit = "us", .better = Better::lower,
       .meaning = "mean time of one operation: the timed loop's time / `-n` (combined across ranks as `-a` says)"},
      {.name = "algbw_GBps", .unit = "GB/s", .better = Better::higher,
       .meaning = "algorithm bandwidth: bytes / time"},
      {.name = "busbw_GBps", .unit = "GB/s", .better = Better::higher, .tracked = true,
       .meaning = "bus bandwidth: algbw x the collective's bus factor (nccl-tests' definition)"},
      {.name = "wrong", .unit = "count", .better = Better::lower,
       .meaning = "elements that failed verification (`-c`; empty: not checked)"},
      {.name = "time_p50_us", .unit = "us", .better = Better::lower,
       .meaning = "median time of one operation (slowest rank per iteration)",
       .where = "`--per-iter`"},
      {.name = "time_p99_us", .unit = "us", .better = Better::lower,
       .meaning = "99th percentile of the same",
       .where = "`--per-iter`"},
      {.name = "time_max_us", .unit = "us", .better = Better::lower,
       .meaning = "slowest operation",
       .where = "`--per-iter`"},
      {.name = "time_cv", .unit = "ratio", .better = Better::lower,
       .meaning = "stddev / mean of the per-operation times",
       .where = "`--per-iter`"},
      {.name = "late_us", .unit = "us", .better = Better::lower,
       .meaning = "the rank's lateness in the arrival pass: the longest time any rank spent inside one "
                 "operation minus this rank's (the latest rank waits least); the straggler's row has note "
                 "`straggler`",
       .where = "`--per-rank-csv`"},
      {.name = "inside_us", .unit = "us", .better = Better::lower,
       .meaning = "the rank's mean time inside one operation in the arrival pass",
       .where = "`--per-rank-csv`"}
    },
    .chart = {{.x = {"bytes"}, .x_scale = AxisScale::log2, .metric = {"busbw_GBps"}, .series = "inplace",
               .series_labels = {{"0", "out-of-place"}, {"1", "in-place"}}, .not_grouping = {"count", "group_hosts"}}},
    .headlines = {{.figure = "peak busbw", .metric = {"busbw_GBps"}, .from = HeadlineFrom::best}},
    .notes = {"`--per-rank-csv FILE` writes, per size, one row per rank with the same parameters plus `rank` and "
              "`rank_host` (out of place). `time_us` is the per-operation time combined across ranks as `-a` says."}};
}

}  // namespace redline
