#include "harness/attention/attention_fit.hpp"

#include <algorithm>
#include <stdexcept>

namespace redline {
namespace {

bool same_shape(const ResultRow& row, const MeasuredAttention& m) {
  return row.status == RowStatus::ok && row.param("hidden") == std::to_string(m.layout.hidden) &&
         row.param("heads") == std::to_string(m.layout.heads) &&
         row.param("kv_heads") == std::to_string(m.layout.kv_heads) && row.param("tp") == std::to_string(m.layout.tp) &&
         row.param("batch") == std::to_string(m.batch) && row.param("seq") == std::to_string(m.seq) &&
         row.param("causal") == (m.causal ? "yes" : "no") && row.param("dtype") == m.dtype &&
         row.param("path") == m.path && row.param("direction") == m.direction;
}

MeasuredAttention fit_shape(std::int64_t heads, std::int64_t batch, const char* path, const char* direction) {
  return {{4096, heads, heads, 1}, batch, 4096, false, "bf16", path, direction};
}

double required(const RunResults& reference, const MeasuredAttention& m) {
  if (const auto tflops = measured_tflops(reference, m)) return *tflops;
  throw std::runtime_error("the fit needs the reference's " + m.path + " " + m.direction + " row at hidden " +
                           std::to_string(m.layout.hidden) + ", " + std::to_string(m.layout.heads) + " heads, batch " +
                           std::to_string(m.batch) + " in " + reference.source);
}

LayoutPrediction predict(const MeasuredAttention& m, const ModelGpu& gpu) {
  return predict_layout(m.layout, m.batch, m.seq, m.causal, GemmDtype::bf16, gpu);
}

// The measurements of the fit set, in TFLOPS.
struct FitData {
  double fwd128_b1, bwd128, bwd256, block128, block64, block256;
};

// The other parameters solved exactly for one exp_exposed; returns the
// predicted d = 64 block time over d = 128's.
double solve_given_exposure(const FitData& data, ModelGpu& gpu) {
  const double peak = gpu.peak_tflops;
  gpu.fit.fwd_ceiling = gpu.fit.bwd_ceiling = gpu.fit.large_head_fwd = gpu.fit.large_head_bwd = gpu.fit.gemm_ceiling = 1;
  // A share of the peak: at most 1, whatever the exponentials leave.
  gpu.fit.fwd_ceiling = std::min(1.0, data.fwd128_b1 / peak / predict(fit_shape(32, 1, "", ""), gpu).fused_fwd.efficiency);
  gpu.fit.bwd_ceiling = data.bwd128 / peak / predict(fit_shape(32, 4, "", ""), gpu).fused_bwd.efficiency;
  gpu.fit.large_head_bwd = data.bwd256 / peak / predict(fit_shape(16, 4, "", ""), gpu).fused_bwd.efficiency;
  const LayoutPrediction p128 = predict(fit_shape(32, 4, "", ""), gpu);
  const double block_s = p128.block_flop / (data.block128 * 1e12);
  const double attention_s = p128.fused_fwd.flop / (peak * 1e12 * p128.fused_fwd.efficiency) +
                             p128.fused_bwd.flop / (peak * 1e12 * p128.fused_bwd.efficiency);
  // projection_efficiency is the quantization alone while gemm_ceiling is 1.
  gpu.fit.gemm_ceiling = p128.projection_flop / (peak * 1e12 * p128.projection_efficiency * (block_s - attention_s));
  const LayoutPrediction p64 = predict(fit_shape(64, 4, "", ""), gpu);
  return predicted_block_ms(p64, gpu) / predicted_block_ms(predict(fit_shape(32, 4, "", ""), gpu), gpu);
}

// The d = 256 forward: what its block's measured time leaves after the
// backward and the projections as predicted.
void solve_large_head_forward(const FitData& data, ModelGpu& gpu) {
  const double peak = gpu.peak_tflops * 1e12;
  gpu.fit.large_head_fwd = 1;
  const LayoutPrediction p = predict(fit_shape(16, 4, "", ""), gpu);
  const double forward_s = p.block_flop / (data.block256 * 1e12) - p.fused_bwd.flop / (peak * p.fused_bwd.efficiency) -
                           p.projection_flop / (peak * p.projection_efficiency);
  gpu.fit.large_head_fwd = std::min(1.0, p.fused_fwd.flop / (peak * forward_s) / p.fused_fwd.efficiency);
}

// The FP8 backward's ceiling: the one FP8 shape measured (hidden 8192, 64
// query and 8 KV heads, seq 32768, batch 1), over what the other factors give.
MeasuredAttention fp8_shape(const char* path, const char* direction) {
  return {{8192, 64, 8, 1}, 1, 32768, false, "fp8", path, direction};
}

void solve_fp8_backward(double measured_tflops, ModelGpu& gpu) {
  const MeasuredAttention m = fp8_shape("", "");
  gpu.fit.fp8_bwd_ceiling = 1;
  const LayoutPrediction p = predict_layout(m.layout, m.batch, m.seq, m.causal, GemmDtype::fp8_e4m3, gpu);
  gpu.fit.fp8_bwd_ceiling = measured_tflops / gpu.fp8_peak_tflops / p.fused_bwd.efficiency;
}

}  // namespace

const ResultRow* find_measured(const RunResults& reference, const MeasuredAttention& shape) {
  for (const ResultRow& row : reference.rows)
    if (same_shape(row, shape) && row.metrics.count("tflops")) return &row;
  return nullptr;
}

std::optional<double> measured_tflops(const RunResults& reference, const MeasuredAttention& shape) {
  const ResultRow* row = find_measured(reference, shape);
  return row ? std::optional<double>(row->metrics.at("tflops")) : std::nullopt;
}

FusedKernelFit fit_fused_kernels(const RunResults& reference, ModelGpu gpu, const std::string& source) {
  const FitData data{required(reference, fit_shape(32, 1, "cudnn", "fwd")),
                     required(reference, fit_shape(32, 4, "cudnn", "bwd")),
                     required(reference, fit_shape(16, 4, "cudnn", "bwd")),
                     required(reference, fit_shape(32, 4, "block_cudnn", "train")),
                     required(reference, fit_shape(64, 4, "block_cudnn", "train")),
                     required(reference, fit_shape(16, 4, "block_cudnn", "train"))};
  // Same FLOPs at d = 64 and 128 (no GQA): the measured time ratio is the TFLOPS ratio.
  const double measured_ratio = data.block128 / data.block64;
  double low = 0, high = 4;  // more exposure, a slower d = 64
  for (int i = 0; i < 60; ++i) {
    gpu.fit.exp_exposed = (low + high) / 2;
    (solve_given_exposure(data, gpu) < measured_ratio ? low : high) = gpu.fit.exp_exposed;
  }
  gpu.fit.exp_exposed = (low + high) / 2;
  solve_given_exposure(data, gpu);
  solve_large_head_forward(data, gpu);
  solve_fp8_backward(required(reference, fp8_shape("cudnn", "bwd")), gpu);
  gpu.fit.source = source;
  return gpu.fit;
}

}  // namespace redline
