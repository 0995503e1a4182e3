#include "harness/checkpoint/checkpoint_columns.hpp"

namespace redline {

ColumnsDeclaration checkpoint_columns() {
  return {
    .parameters =
      {{"stage", "what the row times: raw_write, save, restore, async stages, GPU copies, and the advice rows"},
       {"bytes", "the state's bytes"},
       {"threads", "writer or reader threads"},
       {"chunk", "bytes per write or read call"},
       {"fsync", "0/1: whether the stage fsyncs"},
       {"memory", "GPU copies: pageable or pinned host memory"},
       {"streams", "GPU copies: CUDA streams the copy is split over"}},
    .metrics = {
      {.name = "time_cv", .unit = "ratio", .better = Better::lower,
       .meaning = "stddev / mean of the per-operation times",
       .where = "save rounds"},
      {.name = "time_s", .unit = "s", .better = Better::lower,
       .meaning = "seconds of one stage (save, write, fsync, restore...)"},
      {.name = "GBps", .unit = "GB/s", .better = Better::higher, .tracked = true,
       .meaning = "state bytes / stage seconds"},
      {.name = "fsync_s", .unit = "s", .better = Better::lower,
       .meaning = "the fsync part of a write stage"},
      {.name = "ceiling_pct", .unit = "%", .better = Better::higher, .tracked = true,
       .meaning = "the synchronous save's throughput as a share of the raw write + fsync measured alongside "
                 "it: median raw write (`raw_write_paired`, same threads and chunk) / median save, over "
                 "`--rounds` rounds whose order (raw, save or save, raw) flips each round; absent with "
                 "`--no-fsync` (a save that is not durable is not compared with a durable ceiling)"},
      {.name = "load_alone_iters_per_s", .unit = "1/s", .better = Better::higher,
       .meaning = "the stand-in training load (CPU FMA loop, or GPU work) alone: the mean of 1 s before and 1 "
                 "s after the persist"},
      {.name = "load_during_iters_per_s", .unit = "1/s", .better = Better::higher,
       .meaning = "the same load while the async save persists"},
      {.name = "load_slowdown_pct", .unit = "%", .better = Better::lower, .tracked = true,
       .meaning = "how much the async persist slows the load"},
      {.name = "cost_s", .unit = "s", .better = Better::lower,
       .meaning = "the checkpoint cost C used for the advice (sync stall, or async snapshot)"},
      {.name = "mtbf_h", .unit = "h", .better = Better::higher,
       .meaning = "the mean time between failures used for the advice"},
      {.name = "interval_s", .unit = "s", .better = Better::higher,
       .meaning = "Young/Daly checkpoint interval sqrt(2 C MTBF)"},
      {.name = "stall_vs_sync_pct", .unit = "%", .better = Better::lower, .tracked = true,
       .meaning = "the async save's stall (the snapshot) as a share of the synchronous stall, on the "
                 "advice_async row"},
      {.name = "overhead_pct", .unit = "%", .better = Better::lower, .tracked = true,
       .meaning = "expected time lost to checkpointing and failures: C/interval + L/MTBF, L = the work lost "
                 "per failure (sync: interval/2 + restore; async: interval/2 + persist + restore)"},
      {.name = "lost_work_s", .unit = "s", .better = Better::lower,
       .meaning = "expected work lost per failure: interval/2 (+ persist) + restore"}
    },
    .chart = {{.x = {"threads"}, .x_scale = AxisScale::linear, .metric = {"GBps"}, .series = "chunk"}},
    .headlines = {{.figure = "best GB/s", .metric = {"GBps"}, .from = HeadlineFrom::best}}};
}

}  // namespace redline
