#include "harness/attention/attention_columns.hpp"

#include <iterator>

namespace redline {

namespace {

const ParameterDeclaration kParameters[] = {
    {"hidden", "the model's hidden size"},
    {"heads", "query heads"},
    {"kv_heads", "key and value heads (GQA when fewer than heads)"},
    {"tp", "tensor-parallel ranks the heads are split over"},
    {"head_dim", "hidden / heads (empty when that is not whole)"},
    {"batch", "sequences per GPU"},
    {"seq", "the sequence length"},
    {"causal", "yes or no"},
    {"dtype", "bf16, fp16 or fp8"},
    {"path", "sweep: `unfused`, `cudnn`, `projections`, `unfused_gemm`, and the derived `block_unfused`, "
             "`block_cudnn`"},
    {"direction", "sweep: `fwd`, `bwd`; `train` for a block's forward + backward"},
    {"gemm", "`unfused_gemm` rows (`--unfused-gemms`): the unfused path's GEMM timed alone (scores, output, "
             "grad_v, grad_p, grad_q, grad_k)"},
    {"gemm_layout", "that GEMM's layout as the GEMM benchmark runs it"},
    {"gemm_m", "its m"},
    {"gemm_n", "its n"},
    {"gemm_k", "its k"},
    {"gemm_batch", "its batch count"}};

const MetricDeclaration kMetrics[] = {
    {.name = "tflops", .unit = "TFLOPS", .better = Better::higher, .tracked = true,
     .meaning = "the FLOP convention (forward 4·b·a_q·s²·d, causal with the exact s(s+1)/2 scores, backward "
               "2.5 x forward) / median time, and for the `block_*` rows the parts' FLOPs over their summed "
               "median times",
     .where = "sweep"},
    {.name = "wrong", .unit = "count", .better = Better::lower,
     .meaning = "the non-finite elements, or 1 when a tensor's error is above the dtype's tolerance "
               "(`rel_error_*`)",
     .where = "sweep"},
    {.name = "predicted_efficiency", .unit = "ratio", .better = Better::higher,
     .meaning = "the training block's (projections and attention, forward and backward) predicted share of "
               "the dense peak, time-weighted over its parts (docs/attention_bench.md)",
     .where = "plan"},
    {.name = "predicted_block_ms", .unit = "ms", .better = Better::lower,
     .meaning = "the training block's predicted time (forward and backward, projections included): its FLOPs "
               "over the dense peak at the predicted efficiency; layouts are ranked by it",
     .where = "plan"},
    {.name = "fwd_gflop", .unit = "GFLOP", .better = Better::higher,
     .meaning = "attention forward FLOPs per GPU (4·b·a_q·s²·d; causal: s² is the exact s(s+1)/2) / 1e9"},
    {.name = "bwd_gflop", .unit = "GFLOP", .better = Better::higher,
     .meaning = "attention backward FLOPs per GPU: 2.5 x forward / 1e9"},
    {.name = "block_gflop", .unit = "GFLOP", .better = Better::higher,
     .meaning = "the training block's FLOPs: attention forward and backward plus the QKV and output "
               "projections' GEMMs (forward, and input and weight gradients) / 1e9",
     .where = "plan"},
    {.name = "fused_fwd_efficiency", .unit = "ratio", .better = Better::higher,
     .meaning = "cuDNN's fused forward, predicted: d padding x SM fill x the matmul share left by the "
               "softmax's exponentials (0: no fused kernel runs d)",
     .where = "plan"},
    {.name = "fused_bwd_efficiency", .unit = "ratio", .better = Better::higher,
     .meaning = "the same for the fused backward",
     .where = "plan"},
    {.name = "unfused_fwd_efficiency", .unit = "ratio", .better = Better::higher,
     .meaning = "the unfused path's GEMMs, predicted: tile x wave x K-depth efficiency of the best of five "
               "tiles, time-weighted, x the alignment loss of d off a multiple of 8, x the masked half "
               "under causal",
     .where = "plan"},
    {.name = "unfused_bwd_efficiency", .unit = "ratio", .better = Better::higher,
     .meaning = "the same for the unfused backward's four GEMMs",
     .where = "plan"},
    {.name = "projection_efficiency", .unit = "ratio", .better = Better::higher,
     .meaning = "the QKV and output projections' GEMMs, predicted like the unfused ones",
     .where = "plan"},
    {.name = "fa3_head_dim", .unit = "count", .better = Better::lower,
     .meaning = "the head dim FlashAttention-3's kernel computes at (d rounded up to 64, 96, 128, 192 or "
               "256; empty: none runs d)",
     .where = "plan"},
    {.name = "rank", .unit = "count", .better = Better::lower,
     .meaning = "the layout's place, 1 = fastest, by the block's time (plan: `predicted_block_ms`; sweep: "
               "the block row's measured `time_us`); equal times share a place"},
    {.name = "memory_MiB", .unit = "MiB", .better = Better::lower,
     .meaning = "device memory the case holds: its tensors (Q, K, V, O, LSE; with the backward dO, dQ, dK, "
               "dV) and its workspace (the unfused path's s² scores, cuDNN's workspace; the projections' "
               "rotating GEMM buffers)",
     .where = "sweep"},
    {.name = "rel_error_o", .unit = "ratio", .better = Better::lower,
     .meaning = "O against the exact math in double: ‖x − R‖ / ‖R‖ over the whole tensor on small shapes "
               "(4·b·a_q·s²·d ≤ 1e9), else over sampled rows of the first and last KV group; tolerance bf16 "
               "0.02, fp16 0.005, fp8 0.1 (kernels/attention_check.cpp)",
     .where = "sweep"},
    {.name = "rel_error_lse", .unit = "ratio", .better = Better::lower,
     .meaning = "the log-sum-exp statistics against the exact math in double: ‖x − R‖ / ‖R‖ over the whole "
               "tensor on small shapes (4·b·a_q·s²·d ≤ 1e9), else over sampled rows of the first and last "
               "KV group; tolerance bf16 0.02, fp16 0.005, fp8 0.1 (kernels/attention_check.cpp)",
     .where = "sweep"},
    {.name = "rel_error_dq", .unit = "ratio", .better = Better::lower,
     .meaning = "dQ against the exact math in double: ‖x − R‖ / ‖R‖ over the whole tensor on small shapes "
               "(4·b·a_q·s²·d ≤ 1e9), else over sampled rows of the first and last KV group; tolerance bf16 "
               "0.02, fp16 0.005, fp8 0.1 (kernels/attention_check.cpp)",
     .where = "sweep"},
    {.name = "rel_error_dk", .unit = "ratio", .better = Better::lower,
     .meaning = "dK against the exact math in double: ‖x − R‖ / ‖R‖ over the whole tensor on small shapes "
               "(4·b·a_q·s²·d ≤ 1e9), else over sampled rows of the first and last KV group; tolerance bf16 "
               "0.02, fp16 0.005, fp8 0.1 (kernels/attention_check.cpp)",
     .where = "sweep"},
    {.name = "rel_error_dv", .unit = "ratio", .better = Better::lower,
     .meaning = "dV against the exact math in double: ‖x − R‖ / ‖R‖ over the whole tensor on small shapes "
               "(4·b·a_q·s²·d ≤ 1e9), else over sampled rows of the first and last KV group; tolerance bf16 "
               "0.02, fp16 0.005, fp8 0.1 (kernels/attention_check.cpp)",
     .where = "sweep"},
    {.name = "rel_error", .unit = "ratio", .better = Better::lower,
     .meaning = "‖C − R‖ / ‖R‖ (Frobenius) against a reference computed in fp32 from the same inputs; the "
               "dtype's tolerance is in harness/gpu/gemm_dtype.cpp",
     .where = "`unfused_gemm` rows"},
    {.name = "tile_m", .unit = "count", .better = Better::higher,
     .meaning = "rows of the C tile of the kernel cuBLASLt ran (from its tile id)",
     .where = "`unfused_gemm` rows"},
    {.name = "tile_n", .unit = "count", .better = Better::higher,
     .meaning = "columns of that tile",
     .where = "`unfused_gemm` rows"},
    {.name = "split_k", .unit = "count", .better = Better::lower,
     .meaning = "cuBLASLt's split-K factor for the algorithm (1: none)",
     .where = "`unfused_gemm` rows"}};

}  // namespace

ColumnsDeclaration attention_columns() {
  return {
    .parameters = {std::begin(kParameters), std::end(kParameters)},
    .metrics = {std::begin(kMetrics), std::end(kMetrics)},
    .chart = {{.x = {"batch"}, .metric = {"tflops"}, .series = "path", .not_grouping = {"head_dim"}}},
    .headlines = {{.figure = "block TFLOPS", .metric = {"tflops"}, .where_param = "path",
                   .where_value = "block_cudnn"}},
    .notes = {"An infeasible layout is a `skipped` row with the unmet constraint in its note. The `rank` metric "
              "sits on each layout's best block row at the largest batch."}};
}

}  // namespace redline
