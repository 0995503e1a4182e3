#include "harness/gemm/gemm_columns.hpp"

#include <iterator>

namespace redline {

namespace {

const ParameterDeclaration kParameters[] = {
    {"dtype", "the operands' type (fp32, tf32, bf16, fp16, fp8)"},
    {"layout", "tn, nn or nt: which operands are transposed"},
    {"m", "rows of C"},
    {"n", "columns of C"},
    {"k", "the inner dimension"},
    {"batch", "sweep's `--batch` when above 1 (unbatched keys are unchanged)"},
    {"tile", "predict: the tile the model assumes (`128x256`)"},
    {"sms", "predict: the GPU's SMs"},
    {"ctas_per_sm", "predict: CTAs resident per SM"},
    {"split_k", "predict: the split-K factor"},
    {"result", "peak: `mamf` (the best shape's figures, the shape in the note) so nightly runs compare MAMF "
               "under a fixed key; `mamf_exhaustive` with `--search check`"},
    {"kernel", "peak's roofline rows: `copy` (HBM bandwidth) and `fma` (FP32 FMA rate)"},
    {"timing", "`sustained`: peak's best 3 shapes timed again under sustained load (`--sustain S`)"},
    {"search", "`peak --search check`: quick or exhaustive"},
    {"layer", "model: qkv, attn_out, ffn_up, ffn_gate, ffn_down, logits"},
    {"pass", "model: fwd, bwd_data, bwd_weight"},
    {"variant", "model: a shape timed for the padding advice (`vocab=50304`)"}};

const MetricDeclaration kMetrics[] = {
    {.name = "tflops", .unit = "TFLOPS", .better = Better::higher, .tracked = true,
     .meaning = "2·M·N·K·batch / median time (batch 1 but for `--batch`; the roofline `fma` row: 2 x FMAs / time)"},
    {.name = "hbm_GBps", .unit = "GB/s", .better = Better::higher, .tracked = true,
     .meaning = "bytes read + written / median time of a device-to-device copy of 1 GiB",
     .where = "peak: the roofline `copy` row"},
    {.name = "wrong", .unit = "count", .better = Better::lower,
     .meaning = "checks the whole C by its relative error: the non-finite elements, or 1 when the error is "
               "above the dtype's tolerance (a wrong case is not timed: its row has `wrong` and "
               "`rel_error`, no time or rate)"},
    {.name = "tiles", .unit = "count", .better = Better::lower,
     .meaning = "CTAs launched: ceil(M/tm) x ceil(N/tn) x split-K x batch",
     .where = "predict, sweep"},
    {.name = "waves", .unit = "count", .better = Better::lower,
     .meaning = "tiles / (SMs x CTAs per SM)",
     .where = "predict, sweep"},
    {.name = "full_waves", .unit = "count", .better = Better::lower,
     .meaning = "floor(waves): the waves with every slot busy (the fixed-clock time goes with ceil(waves))",
     .where = "predict"},
    {.name = "tile_efficiency", .unit = "ratio", .better = Better::higher,
     .meaning = "M x N / the padded tile area",
     .where = "predict, sweep"},
    {.name = "wave_efficiency", .unit = "ratio", .better = Better::higher,
     .meaning = "tiles / (ceil(waves) x SMs x CTAs per SM)",
     .where = "predict, sweep"},
    {.name = "gflop", .unit = "GFLOP", .better = Better::higher,
     .meaning = "2·M·N·K / 1e9",
     .where = "predict"},
    {.name = "predicted_efficiency", .unit = "ratio", .better = Better::higher,
     .meaning = "tile efficiency x wave efficiency",
     .where = "predict, sweep"},
    {.name = "predicted_efficiency_power_capped", .unit = "ratio", .better = Better::higher,
     .meaning = "tile efficiency x wave efficiency / ((1 - r) + r x wave efficiency), r = 0.57 fitted on one "
               "H200 bf16 sweep at its power cap (results/references/H200/gemm_sweep.csv); a prediction for "
               "a GPU at its power cap, not a measurement",
     .where = "predict"},
    {.name = "predicted_tflops_power_capped", .unit = "TFLOPS", .better = Better::higher,
     .meaning = "the curve's quantization-free level (found by the power-capped efficiency) x the "
               "power-capped efficiency from the row's tile and wave efficiencies; a prediction for a GPU "
               "at its power cap",
     .where = "sweep"},
    {.name = "rel_error", .unit = "ratio", .better = Better::lower,
     .meaning = "‖C − R‖ / ‖R‖ (Frobenius) against a reference computed in fp32 from the same inputs; the "
               "dtype's tolerance is in harness/gpu/gemm_dtype.cpp"},
    {.name = "tile_m", .unit = "count", .better = Better::higher,
     .meaning = "rows of the C tile of the kernel cuBLASLt ran (from its tile id, else the "
               "kernel's name through CUPTI)"},
    {.name = "tile_n", .unit = "count", .better = Better::higher,
     .meaning = "columns of that tile"},
    {.name = "split_k", .unit = "count", .better = Better::lower,
     .meaning = "cuBLASLt's split-K factor for the algorithm (1: none)"},
    {.name = "heuristic_waves", .unit = "count", .better = Better::lower,
     .meaning = "cuBLASLt's own wave count for the algorithm (its heuristic's wavesCount)"},
    {.name = "grid_ctas", .unit = "count", .better = Better::lower,
     .meaning = "CTAs the GEMM kernel launched (CUPTI); a persistent kernel launches about one per SM "
               "whatever the tile count"},
    {.name = "predicted_tflops", .unit = "TFLOPS", .better = Better::higher,
     .meaning = "the quantization model's prediction: the curve's quantization-free level x "
               "predicted_efficiency",
     .where = "sweep"},
    {.name = "loss_pct", .unit = "%", .better = Better::lower,
     .meaning = "100 x (1 − tflops / the curve's quantization-free level); above 10 the row is flagged",
     .where = "sweep"},
    {.name = "calls_per_step", .unit = "count", .better = Better::higher,
     .meaning = "times the GEMM runs per step (layers, or 1 for logits)",
     .where = "model"},
    {.name = "step_share_pct", .unit = "%", .better = Better::lower,
     .meaning = "the GEMM's share of the step's GEMM time (time x count / step time)",
     .where = "model"}};

}  // namespace

ColumnsDeclaration gemm_columns() {
  return {
    .parameters = {std::begin(kParameters), std::end(kParameters)},
    .metrics = {std::begin(kMetrics), std::end(kMetrics)},
    .chart = {{.x = {"m", "n", "k"}, .x_scale = AxisScale::linear, .metric = {"tflops"},
               .prediction = "predicted_tflops"}},
    .headlines = {{.figure = "MAMF", .metric = {"tflops"}, .where_param = "result", .where_value = "mamf"}},
    .notes = {"The `result=mamf` row reports the best of the sustained rows (since 2026-11-22: it used to be "
              "the search's best short sample, which on a power-capped GPU could be a clock burst 10-18% above "
              "the sustained figure; a baseline from before then compares high)."}};
}

}  // namespace redline
