#include "harness/attention/attention_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "harness/core/units.hpp"
#include "harness/gpu/gemm_model.hpp"

namespace redline {
namespace {

std::string text(std::int64_t value) { return std::to_string(value); }

// Tensor-core pipelines consume K in slices of 64 16-bit elements (128
// bytes): a K that is not a multiple of 64 pays for a whole last slice.
double k_depth_efficiency(std::int64_t k) {
  const std::int64_t slices = (k + 63) / 64;
  return static_cast<double>(k) / static_cast<double>(slices * 64);
}

// arXiv 2401.14489 (A100, QK^T GEMMs): about 207 TFLOPS when d has a
// power-of-two factor of 8 or more, 100-150 at 2-4, under 100 when d is odd;
// 125/207 and 95/207 rounded.
double alignment_efficiency(std::int64_t head_dim) {
  const std::int64_t factor = power_of_two_factor(head_dim);
  return factor >= 8 ? 1.0 : factor >= 2 ? 0.6 : 0.45;
}

struct GemmEstimate {
  double efficiency = 0;
  TileShape tile;
};

GemmEstimate estimate_gemm(const AttentionGemm& gemm, int sm_count) {
  GemmEstimate e;
  e.efficiency = best_tile_efficiency(gemm.m, gemm.n, gemm.batch, sm_count, &e.tile) * k_depth_efficiency(gemm.k);
  return e;
}

// Total FLOPs over the sum of each part's FLOPs / efficiency: the efficiency
// of running the parts one after another.
double time_weighted(const std::vector<std::pair<double, double>>& flop_and_efficiency) {
  double flop = 0, time = 0;
  for (const auto& [f, e] : flop_and_efficiency) {
    if (e <= 0) return 0;
    flop += f;
    time += f / e;
  }
  return time > 0 ? flop / time : 0;
}

// The GEMMs' quantization, time-weighted, named by the one that loses most.
ModelFactor gemm_quantization(const std::vector<AttentionGemm>& gemms, int sm_count, const char* name) {
  std::vector<std::pair<double, double>> parts;
  const AttentionGemm* worst = nullptr;
  GemmEstimate worst_estimate{2.0, {}};
  for (const auto& g : gemms) {
    const GemmEstimate e = estimate_gemm(g, sm_count);
    parts.emplace_back(g.flop(), e.efficiency);
    if (e.efficiency < worst_estimate.efficiency) worst = &g, worst_estimate = e;
  }
  ModelFactor f{name, time_weighted(parts), ""};
  if (worst)
    f.why = "worst " + worst->name + " (" + text(worst->batch) + " x " + text(worst->m) + "x" + text(worst->n) + "x" +
            text(worst->k) + ", tile " + tile_text(worst_estimate.tile) + "): " + format_percent(worst_estimate.efficiency);
  return f;
}

ModelFactor gemm_ceiling(const ModelGpu& gpu) {
  return {"gemm_ceiling", gpu.fit.gemm_ceiling, "cuBLASLt's share of the peak at full tiles and waves (" + gpu.fit.source + ")"};
}

PathPrediction product_of(double flop, std::vector<ModelFactor> factors) {
  PathPrediction p;
  p.flop = flop;
  p.efficiency = 1;
  for (const auto& f : factors) p.efficiency *= f.value;
  p.factors = std::move(factors);
  return p;
}

PathPrediction predict_unfused(const AttentionShape& shape, AttentionDirection direction, GemmDtype dtype,
                               const ModelGpu& gpu) {
  const double flop = direction == AttentionDirection::forward ? attention_forward_flop(shape)
                                                               : attention_backward_flop(shape);
  if (dtype == GemmDtype::fp8_e4m3)
    return product_of(flop, {{"unfused_kernel", 0, "the unfused path runs bf16 and fp16 only"}});
  const std::vector<AttentionGemm> gemms = unfused_gemms(shape, direction);
  std::vector<ModelFactor> factors = {gemm_quantization(gemms, gpu.sm_count, "gemm_quantization"), gemm_ceiling(gpu)};
  if (direction == AttentionDirection::backward) {
    // Efficiency is of the convention's FLOPs, which count the fused kernels'
    // recompute of S; keeping P, this path runs four GEMMs, not five. Both
    // counts over all s^2 scores: causal_waste below takes the mask.
    AttentionShape unmasked = shape;
    unmasked.causal = false;
    double gemm_flop = 0;
    for (const auto& g : gemms) gemm_flop += g.flop();
    factors.push_back({"no_recompute", attention_backward_flop(unmasked) / gemm_flop,
                       "P is kept, so four GEMMs do the work the convention counts as five"});
  }
  const double aligned = alignment_efficiency(shape.head_dim);
  if (aligned < 1)
    factors.push_back({"alignment", aligned,
                       "d = " + text(shape.head_dim) + " is off a multiple of 8: rows off 16 bytes take slower GEMM kernels"});
  if (shape.causal) {
    const double s = static_cast<double>(shape.seq);
    factors.push_back({"causal_waste", unmasked_scores(shape) / (s * s),
                       "the GEMMs compute all s^2 scores; the mask discards almost half"});
  }
  return product_of(flop, std::move(factors));
}

ModelFactor sm_fill(const AttentionShape& shape, int sm_count) {
  const std::int64_t ctas = shape.batch * shape.heads * ((shape.seq + 127) / 128);
  const std::int64_t waves = (ctas + sm_count - 1) / sm_count;
  const double value = static_cast<double>(ctas) / static_cast<double>(waves * sm_count);
  return {"sm_fill", value,
          text(ctas) + " CTAs (b x a_q x 128-query tiles) on " + text(sm_count) + " SMs: " + text(waves) +
              (waves == 1 ? " wave" : " waves") + ", " + format_percent(value) + " of the slots busy"};
}

// The tiles on the causal mask's diagonal run whole; half their scores count.
ModelFactor causal_diagonal(const AttentionShape& shape) {
  const double tiles = static_cast<double>((shape.seq + 127) / 128);
  const double computed = tiles * (tiles + 1) / 2 * 128.0 * 128.0;
  const double value = std::min(1.0, unmasked_scores(shape) / computed);
  return {"causal_diagonal", value, "the mask's diagonal 128 x 128 tiles are computed whole: " + format_percent(value) +
                                        " of the computed scores count"};
}

ModelFactor exponentials(std::int64_t kernel_head_dim, AttentionDirection direction, GemmDtype dtype,
                         const ModelGpu& gpu) {
  const double tensor_flop = (direction == AttentionDirection::forward ? 4.0 : 10.0) * static_cast<double>(kernel_head_dim);
  // FP8 tensor cores run twice the bf16 rate: an exp costs twice the FLOPs.
  const double exp_cost = gpu.flop_per_exp * (dtype == GemmDtype::fp8_e4m3 ? 2.0 : 1.0);
  const double exposed = gpu.fit.exp_exposed * exp_cost;
  const double value = tensor_flop / (tensor_flop + exposed);
  return {"exponentials", value,
          "per score " + format_number(tensor_flop, 0) + " tensor FLOPs beside one exp worth " +
              format_number(exp_cost, 0) + ", " + format_percent(gpu.fit.exp_exposed, 0) +
              " of it not hidden (fitted): " + format_percent(value) + " of the time is matmul"};
}

ModelFactor kernel_ceiling(AttentionDirection direction, GemmDtype dtype, const ModelGpu& gpu) {
  const bool forward = direction == AttentionDirection::forward;
  const bool fp8_backward = !forward && dtype == GemmDtype::fp8_e4m3;
  const double value = forward ? gpu.fit.fwd_ceiling : fp8_backward ? gpu.fit.fp8_bwd_ceiling : gpu.fit.bwd_ceiling;
  return {"kernel_ceiling", value,
          std::string("the fused ") + (forward ? "forward" : fp8_backward ? "FP8 backward" : "backward") +
              "'s share of the peak at d = 128 (" + gpu.fit.source + ")"};
}

// The fused kernel's matmuls whose K is d pay for a whole last 64-element
// slice, as the unfused GEMMs do: S = Q K^T, one of the forward's two equal
// matmuls; S again and dP = dO V^T, two of the backward's five.
ModelFactor fused_k_depth(std::int64_t head_dim, AttentionDirection direction) {
  const double share = direction == AttentionDirection::forward ? 1.0 / 2 : 2.0 / 5;
  const double depth = k_depth_efficiency(head_dim);
  const double value = 1 / (share / depth + (1 - share));
  return {"k_depth", value,
          "d = " + text(head_dim) + " is off a multiple of 64: the matmuls with K = d (" +
              format_percent(share, 0) + " of the work) run " + format_percent(depth) + " full slices"};
}

// Above d = 128 a CTA's fp32 accumulators (O in the forward; dK and dV in the
// backward) outgrow the register file, so the kernel takes smaller tiles.
ModelFactor large_head(std::int64_t head_dim, AttentionDirection direction, const ModelGpu& gpu) {
  const bool forward = direction == AttentionDirection::forward;
  return {forward ? "large_head_fwd" : "large_head_bwd", forward ? gpu.fit.large_head_fwd : gpu.fit.large_head_bwd,
          "d = " + text(head_dim) + " > 128: the " + (forward ? "forward's O" : "backward's dK and dV") +
              " accumulators outgrow the registers and the tiles shrink (fitted)"};
}

PathPrediction predict_fused(const AttentionShape& shape, AttentionDirection direction, GemmDtype dtype,
                             const FusedSupport& support, const ModelGpu& gpu) {
  const double flop = direction == AttentionDirection::forward ? attention_forward_flop(shape)
                                                               : attention_backward_flop(shape);
  if (!support.supported) return product_of(flop, {{"fused_kernel", 0, support.reason}});
  std::vector<ModelFactor> factors;
  if (support.kernel_head_dim > shape.head_dim)
    factors.push_back({"fused_padding", static_cast<double>(shape.head_dim) / static_cast<double>(support.kernel_head_dim),
                       support.reason});
  if (k_depth_efficiency(support.kernel_head_dim) < 1) factors.push_back(fused_k_depth(support.kernel_head_dim, direction));
  factors.push_back(sm_fill(shape, gpu.sm_count));
  if (shape.causal) factors.push_back(causal_diagonal(shape));
  factors.push_back(exponentials(support.kernel_head_dim, direction, dtype, gpu));
  factors.push_back(kernel_ceiling(direction, dtype, gpu));
  if (shape.head_dim > 128) factors.push_back(large_head(shape.head_dim, direction, gpu));
  return product_of(flop, std::move(factors));
}

void predict_projections(LayoutPrediction& p, std::int64_t batch, std::int64_t seq, const ModelGpu& gpu) {
  std::vector<AttentionGemm> gemms = projection_gemms(p.layout, batch, seq, AttentionDirection::forward);
  for (auto& g : projection_gemms(p.layout, batch, seq, AttentionDirection::backward)) gemms.push_back(std::move(g));
  const ModelFactor f = gemm_quantization(gemms, gpu.sm_count, "projections");
  const ModelFactor ceiling = gemm_ceiling(gpu);
  p.projection_efficiency = f.value * ceiling.value;
  for (const auto& g : gemms) p.projection_flop += g.flop();
  p.block_factors.push_back(f);
  p.block_factors.push_back(ceiling);
}

void predict_block(LayoutPrediction& p) {
  const bool fused = p.cudnn_fwd.supported && p.cudnn_bwd.supported;
  const PathPrediction& fwd = fused ? p.fused_fwd : p.unfused_fwd;
  const PathPrediction& bwd = fused ? p.fused_bwd : p.unfused_bwd;
  std::vector<ModelFactor> factors;
  // Told, not charged (the unfused path's own factors are), unless that path
  // cannot run either: then it is what stops the block.
  const bool unfused_runs = p.unfused_fwd.efficiency > 0 && p.unfused_bwd.efficiency > 0;
  if (!fused)
    factors.push_back({"no_fused_kernel", unfused_runs ? 1.0 : 0.0,
                       "cuDNN runs no fused kernel for it (" + (p.cudnn_fwd.supported ? p.cudnn_bwd.reason : p.cudnn_fwd.reason) +
                           (unfused_runs ? "): attention runs unfused, with s^2 scores in memory" : ")")});
  for (const auto& f : fwd.factors) factors.push_back(f);
  // The backward's own, named apart where the forward has the same factor.
  for (ModelFactor f : bwd.factors) {
    if (std::any_of(fwd.factors.begin(), fwd.factors.end(), [&](const ModelFactor& g) { return g.name == f.name; }))
      f.name += "_bwd";
    factors.push_back(std::move(f));
  }
  for (const auto& f : p.block_factors) factors.push_back(f);
  p.block_factors = std::move(factors);
  p.block_flop = fwd.flop + bwd.flop + p.projection_flop;
  p.block_efficiency = time_weighted({{fwd.flop, fwd.efficiency}, {bwd.flop, bwd.efficiency},
                                      {p.projection_flop, p.projection_efficiency}});
}

}  // namespace

std::vector<AttentionGemm> unfused_gemms(const AttentionShape& shape, AttentionDirection direction) {
  validate(shape);
  const std::int64_t g = shape.heads / shape.kv_heads, s = shape.seq, d = shape.head_dim;
  const std::int64_t batch = shape.batch * shape.kv_heads;
  if (direction == AttentionDirection::forward) return {{"S = Q K^T", g * s, s, d, batch}, {"O = P V", g * s, d, s, batch}};
  return {{"dV = P^T dO", s, d, g * s, batch},
          {"dP = dO V^T", g * s, s, d, batch},
          {"dQ = dS K", g * s, d, s, batch},
          {"dK = dS^T Q", s, d, g * s, batch}};
}

double best_tile_efficiency(std::int64_t m, std::int64_t n, std::int64_t batch, int sm_count, TileShape* chosen) {
  static constexpr std::array<TileShape, 5> kTiles = {
      TileShape{256, 128}, TileShape{128, 256}, TileShape{128, 128}, TileShape{128, 64}, TileShape{64, 128}};
  double best = 0;
  for (const TileShape& tile : kTiles) {
    GemmProblem problem;
    problem.m = m, problem.n = n, problem.k = 1, problem.tile = tile, problem.sm_count = sm_count;
    problem.batch = batch;
    const double efficiency = predict_gemm(problem).predicted_efficiency;
    if (efficiency > best + 1e-12) {
      best = efficiency;
      if (chosen) *chosen = tile;
    }
  }
  return best;
}

std::vector<AttentionGemm> projection_gemms(const HeadLayout& layout, std::int64_t batch, std::int64_t seq,
                                            AttentionDirection direction) {
  const AttentionShape shape = per_gpu_shape(layout, batch, seq, false);
  const std::int64_t tokens = batch * seq, h = layout.hidden, d = shape.head_dim;
  const std::int64_t qkv = (shape.heads + 2 * shape.kv_heads) * d, attended = shape.heads * d;
  if (direction == AttentionDirection::forward)
    return {{"QKV = X W_qkv", tokens, qkv, h, 1}, {"Y = A W_o", tokens, h, attended, 1}};
  // Each projection's backward: the input gradient and the weight gradient.
  return {{"dX = dQKV W_qkv^T", tokens, h, qkv, 1},
          {"dW_qkv = X^T dQKV", h, qkv, tokens, 1},
          {"dA = dY W_o^T", tokens, attended, h, 1},
          {"dW_o = A^T dY", attended, h, tokens, 1}};
}

ModelGpu model_gpu(const GpuPeaks& peaks) {
  ModelGpu gpu;
  gpu.name = peaks.model;
  gpu.sm_count = peaks.sm_count;
  gpu.compute_capability = peaks.compute_capability;
  // 16 exp results per SM per clock: the special-function unit rate of
  // compute capability 8.x-10.x (CUDA C++ Programming Guide, arithmetic
  // instruction throughput).
  if (peaks.bf16_tflops > 0) gpu.peak_tflops = peaks.bf16_tflops;
  gpu.fp8_peak_tflops = peaks.fp8_tflops;  // 0 where the GPU has no FP8 (A100): nothing in FP8 runs
  if (peaks.sm_count > 0 && peaks.boost_clock_ghz > 0)
    gpu.flop_per_exp = peaks.bf16_tflops * 1e12 / (peaks.sm_count * peaks.boost_clock_ghz * 1e9) / 16;
  return gpu;
}

double predicted_block_ms(const LayoutPrediction& p, const ModelGpu& gpu) {
  const double peak = gpu.peak_tflops_for(p.dtype);
  if (!p.feasible || !(p.block_efficiency > 0) || !(peak > 0)) return 0;
  return p.block_flop / (peak * 1e12 * p.block_efficiency) * 1e3;
}

LayoutPrediction predict_layout(const HeadLayout& layout, std::int64_t batch, std::int64_t seq, bool causal,
                                GemmDtype dtype, const ModelGpu& gpu) {
  if (batch < 1 || seq < 1) throw std::invalid_argument("predict_layout needs batch and seq of at least 1");
  LayoutPrediction p;
  p.layout = layout;
  p.dtype = dtype;
  p.feasible = layout_feasible(layout);
  if (!p.feasible) return p;
  p.shape = per_gpu_shape(layout, batch, seq, causal);
  const std::int64_t d = p.shape.head_dim;
  const auto fwd = AttentionDirection::forward, bwd = AttentionDirection::backward;
  p.flash3_fwd = flash_attention3_support(d, dtype, fwd, gpu.compute_capability);
  p.flash3_bwd = flash_attention3_support(d, dtype, bwd, gpu.compute_capability);
  p.cudnn_fwd = cudnn_sdpa_support(d, dtype, fwd, gpu.compute_capability);
  p.cudnn_bwd = cudnn_sdpa_support(d, dtype, bwd, gpu.compute_capability);
  p.fused_fwd = predict_fused(p.shape, fwd, dtype, p.cudnn_fwd, gpu);
  p.fused_bwd = predict_fused(p.shape, bwd, dtype, p.cudnn_bwd, gpu);
  p.unfused_fwd = predict_unfused(p.shape, fwd, dtype, gpu);
  p.unfused_bwd = predict_unfused(p.shape, bwd, dtype, gpu);
  predict_projections(p, batch, seq, gpu);
  predict_block(p);
  return p;
}

}  // namespace redline
