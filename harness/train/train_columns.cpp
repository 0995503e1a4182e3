#include "harness/train/train_columns.hpp"

#include <iterator>

namespace redline {

namespace {

const ParameterDeclaration kParameters[] = {
    {"model", "the preset, or custom"},
    {"layers", "transformer layers"},
    {"seq", "the sequence length"},
    {"mbs", "the micro-batch"},
    {"ga", "run: gradient-accumulation micro-batches per optimizer step"},
    {"recompute", "activation recompute: none, selective or full"},
    {"attention", "run: cudnn (fused) or unfused"}};

const MetricDeclaration kMetrics[] = {
    {.name = "tokens_per_s", .unit = "tokens/s", .better = Better::higher, .tracked = true,
     .meaning = "tokens of one optimizer step (mbs x seq x ga) / the median step time; sweep: the trial's",
     .where = "run, sweep"},
    {.name = "step_time_ms", .unit = "ms", .better = Better::lower,
     .meaning = "run: the median of the `--steps` timed steps (CUDA events, a step a sample through the case "
               "runner's sample timer, not held behind the stream blocker: a step's thousands of launches "
               "would not fit a held queue, and the host's launch pace is part of a real step; after "
               "`--warmup` steps); sweep: batch_size x seq / tokens_per_s of the trial",
     .where = "run, sweep"},
    {.name = "params", .unit = "count", .better = Better::lower,
     .meaning = "the model's parameters (embedding, layers, final norm, untied logits)",
     .where = "memory"},
    {.name = "matmul_params", .unit = "count", .better = Better::lower,
     .meaning = "parameters a GEMM multiplies per token (the N of 6·N FLOPs a token)",
     .where = "memory"},
    {.name = "model_gflop", .unit = "GFLOP", .better = Better::higher,
     .meaning = "the step's model FLOPs (MFU's numerator: 6·N_matmul·tokens + 3 x the attention forward) / "
               "1e9",
     .where = "memory"},
    {.name = "weight_bytes", .unit = "bytes", .better = Better::lower,
     .meaning = "the bf16 compute copy of the weights: 2 per parameter",
     .where = "memory"},
    {.name = "grad_bytes", .unit = "bytes", .better = Better::lower,
     .meaning = "fp32 gradients, accumulated over micro-batches: 4 per parameter",
     .where = "memory"},
    {.name = "master_bytes", .unit = "bytes", .better = Better::lower,
     .meaning = "fp32 master weights: 4 per parameter",
     .where = "memory"},
    {.name = "optimizer_bytes", .unit = "bytes", .better = Better::lower,
     .meaning = "AdamW's m and v, fp32: 8 per parameter",
     .where = "memory"},
    {.name = "activation_bytes", .unit = "bytes", .better = Better::lower,
     .meaning = "what the forward keeps for the backward in this recompute mode, every layer plus what is "
               "kept outside the layers (harness/train/activation_memory.hpp lists each tensor)",
     .where = "memory"},
    {.name = "activation_bytes_per_layer", .unit = "bytes", .better = Better::lower,
     .meaning = "the same for one layer",
     .where = "memory"},
    {.name = "korthikanti_bytes_per_layer", .unit = "bytes", .better = Better::lower,
     .meaning = "Korthikanti et al. (2022)'s s·b·h·(34 + 5·a·s/h), for comparison",
     .where = "memory"},
    {.name = "working_bytes", .unit = "bytes", .better = Better::lower,
     .meaning = "the backward's buffers for the layer being worked on (gradients, and what the mode "
               "recomputes)",
     .where = "memory"},
    {.name = "workspace_bytes", .unit = "bytes", .better = Better::lower,
     .meaning = "cuBLASLt's shared workspace (32 MiB) and the attention backward's fp32 dQ accumulator",
     .where = "memory"},
    {.name = "peak_bytes", .unit = "bytes", .better = Better::lower,
     .meaning = "the predicted peak: state + activations + working set + workspaces, all live when the "
               "backward starts",
     .where = "memory"},
    {.name = "max_mbs", .unit = "count", .better = Better::higher,
     .meaning = "the largest micro-batch whose predicted peak fits `--gpu-memory` (0: none)",
     .where = "memory"},
    {.name = "measured_peak_bytes", .unit = "bytes", .better = Better::lower,
     .meaning = "the device memory in use after each timed step, at most (cudaMemGetInfo's free at the start "
               "less its free after each step: device-wide, so other processes count; a scratch buffer "
               "allocated and freed inside a step does not)",
     .where = "run, sweep"},
    {.name = "predicted_peak_bytes", .unit = "bytes", .better = Better::lower,
     .meaning = "`peak_bytes` for the trial's micro-batch and mode, beside the measurement",
     .where = "run, sweep"},
    {.name = "mfu_pct", .unit = "%", .better = Better::higher,
     .meaning = "model FLOPs (6·N_matmul·tokens + 3 x the attention forward; recompute not counted) / step "
               "time / the datasheet's dense peak",
     .where = "run, sweep"},
    {.name = "hfu_pct", .unit = "%", .better = Better::higher,
     .meaning = "hardware FLOPs (the model FLOPs plus the attention backward's recompute of the scores, or "
               "on the unfused path its whole forward again and all s² scores; in `full` mode each layer's "
               "forward again) / step time / the dense peak",
     .where = "run"},
    {.name = "model_tflops", .unit = "TFLOPS", .better = Better::higher, .tracked = true,
     .meaning = "model FLOPs / step time",
     .where = "run"},
    {.name = "forward_ms", .unit = "ms", .better = Better::lower,
     .meaning = "the forward passes (embedding to loss) of one optimizer step, every micro-batch of `--ga`, "
               "CUDA events, the mean over the timed steps",
     .where = "run"},
    {.name = "backward_ms", .unit = "ms", .better = Better::lower,
     .meaning = "the backward passes of one optimizer step, with the mode's recompute",
     .where = "run"},
    {.name = "optimizer_ms", .unit = "ms", .better = Better::lower,
     .meaning = "AdamW over every tensor and the bf16 refresh",
     .where = "run"},
    {.name = "optimizer_GBps", .unit = "GB/s", .better = Better::higher,
     .meaning = "the bytes one AdamW step moves (30 a parameter: fp32 master, m and v read and written, the "
               "gradient read, the bf16 weight written) / `optimizer_ms`: how near the GPU's HBM the "
               "per-step optimizer runs",
     .where = "run"},
    {.name = "gemm_ms", .unit = "ms", .better = Better::lower,
     .meaning = "the GPU time of one step's GEMM kernels (CUPTI, one extra traced step; kernels sorted by "
               "name, harness/gpu/kernel_category.hpp)",
     .where = "run"},
    {.name = "attention_ms", .unit = "ms", .better = Better::lower,
     .meaning = "the same for the attention kernels",
     .where = "run"},
    {.name = "elementwise_ms", .unit = "ms", .better = Better::lower,
     .meaning = "the same for every other kernel (norms, rotary, SwiGLU, cross-entropy, optimizer)",
     .where = "run"},
    {.name = "other_pct", .unit = "%", .better = Better::lower,
     .meaning = "the share of the step time not spent in GEMM or attention kernels (elementwise kernels, "
               "launch gaps): 100 x (1 - (gemm_ms + attention_ms) / step_time_ms)",
     .where = "run"},
    {.name = "gemm_alone_ms", .unit = "ms", .better = Better::lower,
     .meaning = "one step's GEMM calls timed alone: each GEMM call of a micro-batch (the step's own plan and "
               "tensors) timed by itself as the case runner times a kernel (samples of back-to-back calls "
               "held behind the stream blocker, about 2 ms and at most 16 calls each; a warm-up sample, then "
               "3 to 20 until their CV is under 2% or 2 s have passed), the median per call, summed, times "
               "--ga",
     .where = "run"},
    {.name = "attention_alone_ms", .unit = "ms", .better = Better::lower,
     .meaning = "the same for the attention forward and backward calls (the unfused path's copies and "
               "softmax kernels included)",
     .where = "run"},
    {.name = "step_over_alone", .unit = "ratio", .better = Better::lower,
     .meaning = "step_time_ms / (gemm_alone_ms + attention_alone_ms): the issue's step-time target is 1.10 "
               "or less",
     .where = "run"},
    {.name = "passes_over_alone", .unit = "ratio", .better = Better::lower,
     .meaning = "(forward_ms + backward_ms) / (gemm_alone_ms + attention_alone_ms): the same without the "
               "optimizer, whose one pass over the parameters does not shrink with the batch",
     .where = "run"},
    {.name = "allocated_bytes", .unit = "bytes", .better = Better::lower,
     .meaning = "what the stack allocated: the memory model's lists, each tensor padded for alignment",
     .where = "run"},
    {.name = "memory_error_pct", .unit = "%", .better = Better::lower,
     .meaning = "predicted peak / measured peak - 1",
     .where = "run"},
    {.name = "loss_first", .unit = "nats", .better = Better::lower,
     .meaning = "the loss of the first timed step, on the fixed batch",
     .where = "run"},
    {.name = "loss_last", .unit = "nats", .better = Better::lower,
     .meaning = "the loss of the last timed step (`--check` fails the run unless it is below `loss_first`)",
     .where = "run"}};

}  // namespace

ColumnsDeclaration training_step_columns() {
  return {
    .parameters = {std::begin(kParameters), std::end(kParameters)},
    .metrics = {std::begin(kMetrics), std::end(kMetrics)},
    .headlines = {{.figure = "tokens/s", .metric = {"tokens_per_s"}}},
    .notes = {"sweep's rows lead with `recompute`, then the batch-sweep engine's `batch_size`, `program` and "
              "`config`, with `tokens_per_s` as the throughput."}};
}

}  // namespace redline
