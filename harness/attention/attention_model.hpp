// The model of one head layout's speed, before anything runs: the FLOPs of
// the attention block, the GEMMs of the unfused path and the tile, wave and
// K-depth quantization they suffer, and the factors that decide a fused
// kernel's share of the tensor-core peak. Every factor is a fraction in
// (0, 1] with a sentence saying why; a layout's predicted efficiency is their
// product, so a ranking can name the factor that costs a layout its place.
//
// The factors (docs/attention_bench.md derives them):
//   fused padding    d / the head dim the fused kernel computes at;
//   K depth          the fused matmuls whose K is d (S = Q K^T; in the
//                    backward also dP = dO V^T) pay for a whole last slice of
//                    64 elements, as unfused GEMMs do (the sweeps show it:
//                    d = 80 and 160 lose what this predicts, held back from
//                    the fit);
//   SM fill          b * a_q * ceil(s / 128) CTAs (one per 128-query tile and
//                    head) over the SMs, with the last wave's idle slots lost;
//   causal diagonal  the 128 x 128 tiles on the mask's diagonal are computed
//                    whole, half of them counted;
//   exponentials     each score costs one exp on the special-function units
//                    (16 per SM per clock) beside 4d (forward) or 10d
//                    (backward) tensor FLOPs at the padded d; at 4,096 FLOP
//                    per SM per clock (Hopper bf16) an exp costs as much as
//                    256 FLOPs, of which the kernel hides all but a fitted
//                    share under the matmuls;
//   kernel ceiling   the share of the dense peak the fused kernel reaches
//                    without those losses, per direction (fitted);
//   large head       above d = 128, per direction (fitted: the fp32
//                    accumulators, O or dK and dV, outgrow the registers and
//                    the tiles shrink);
//   unfused GEMMs    tile x wave efficiency (harness/gpu/gemm_model.hpp) of
//                    the best of a few tiles, times the K-depth loss when K = d
//                    is not a multiple of 64, times the alignment loss of d off
//                    a multiple of 8 (arXiv 2401.14489), and for causal the
//                    masked half of the scores it computes anyway; with the
//                    projections, times the GEMM ceiling (fitted).
// The fitted parameters (FusedKernelFit) come from the H200 reference
// results; harness/attention/attention_fit.hpp derives them, and a test holds
// the constants below to that derivation and checks a held-back shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/attention/attention_shape.hpp"
#include "harness/attention/fused_kernels.hpp"
#include "harness/attention/head_layout.hpp"
#include "harness/gpu/gemm_dtype.hpp"
#include "harness/gpu/gemm_model.hpp"
#include "harness/gpu/gpu_peaks.hpp"

namespace redline {

struct ModelFactor {
  std::string name;  // "sm_fill"
  double value = 1;  // fraction of the peak it leaves, (0, 1]
  std::string why;   // "512 CTAs on 132 SMs: 3.9 waves, the last 88% full"
};

// A batched GEMM of the unfused path: `batch` independent C[m,n] = A[m,k] B[k,n].
struct AttentionGemm {
  std::string name;  // "S = Q K^T"
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  double flop() const { return 2.0 * static_cast<double>(m * n) * static_cast<double>(k * batch); }
};

// Forward: S = Q K^T and O = P V. Backward: dV = P^T dO, dP = dO V^T,
// dQ = dS K, dK = dS^T Q. Under GQA a KV group's g = a_q / a_kv query heads
// are consecutive in BHSD, so each GEMM runs per (batch, KV head) with the
// group's queries stacked: M = g * s where Q's rows are, and dK, dV sum over
// the group in the GEMM's K.
std::vector<AttentionGemm> unfused_gemms(const AttentionShape& shape, AttentionDirection direction);

// The tiles the model lets the library choose from (the best one's
// efficiency counts): 256x128, 128x256, 128x128, 128x64, 64x128.
double best_tile_efficiency(std::int64_t m, std::int64_t n, std::int64_t batch, int sm_count, TileShape* chosen = nullptr);

// The projections around attention, per GPU (T-way tensor parallel):
// QKV: M = b*s tokens, N = (a_q + 2 a_kv) d / T, K = h; output: N = h,
// K = a_q d / T. Backward: two GEMMs of the same size for each.
std::vector<AttentionGemm> projection_gemms(const HeadLayout& layout, std::int64_t batch, std::int64_t seq,
                                            AttentionDirection direction);

struct PathPrediction {
  double flop = 0;                  // by the convention of attention_shape.hpp
  double efficiency = 0;            // product of the factors
  std::vector<ModelFactor> factors;
};

struct LayoutPrediction {
  HeadLayout layout;
  GemmDtype dtype = GemmDtype::bf16;
  AttentionShape shape;  // per GPU
  bool feasible = false;
  FusedSupport flash3_fwd, flash3_bwd, cudnn_fwd, cudnn_bwd;
  PathPrediction fused_fwd, fused_bwd;      // the cuDNN kernel (the sweep's cudnn path)
  PathPrediction unfused_fwd, unfused_bwd;
  double projection_flop = 0;               // forward + backward
  double projection_efficiency = 0;         // the projections' GEMMs, time-weighted
  // The training block (projections and attention, forward and backward),
  // on the fused path where cuDNN runs d in both directions, else unfused:
  // total FLOPs over the sum of each part's FLOPs / efficiency.
  double block_flop = 0;
  double block_efficiency = 0;
  std::vector<ModelFactor> block_factors;  // the attention path's factors (forward, then backward: "_bwd" where a name repeats), then the projections'
};

// The parameters fitted to measured attention (attention_fit.hpp), as shares
// of the dense tensor-core peak or of a loss: fit_fused_kernels on
// results/references/H200 gives these (tests/attention_fit_test.cpp holds
// them to it). The forward's ceiling came out at the bound, 1: at d = 128 its
// losses are all in the SM fill and the exponentials (1.22 exps' worth of
// time a score is exposed: the softmax's other per-score work too).
struct FusedKernelFit {
  double fwd_ceiling = 1.0;        // cuDNN's forward at d = 128, SMs full, exponentials apart
  double bwd_ceiling = 0.6558;     // its backward, the same way
  double exp_exposed = 1.2248;     // the exponentials' time not hidden under the matmuls, in exps
  double large_head_fwd = 0.8493;  // the forward above d = 128, beyond K depth and exponentials
  double large_head_bwd = 0.6801;  // the backward above d = 128, the same way
  double gemm_ceiling = 0.6989;    // cuBLASLt at full tiles and waves (the projections, the unfused GEMMs)
  // cuDNN's FP8 backward (d = 128 only on Hopper), of the FP8 peak: bwd_ceiling
  // would put it 33% above the one FP8 shape measured.
  double fp8_bwd_ceiling = 0.4932;
  std::string source = "fitted to the H200 reference (results/references/H200, attention_h4096, 2026-11-26)";
};

struct ModelGpu {
  std::string name;  // "H100 SXM"
  int sm_count = 132;
  int compute_capability = 90;
  // Tensor-core FLOPs one SFU exp costs: dense bf16 FLOP per SM per clock / 16.
  double flop_per_exp = 256;
  double peak_tflops = 989.4;       // dense bf16 (and fp16), to turn efficiencies into times
  double fp8_peak_tflops = 1978.9;  // dense fp8: FP8 attention and its projections run at this rate
  FusedKernelFit fit;

  // The dense peak an efficiency of `dtype` is a share of, as the sweep
  // reports measured TFLOPS against its dtype's peak.
  double peak_tflops_for(GemmDtype dtype) const { return dtype == GemmDtype::fp8_e4m3 ? fp8_peak_tflops : peak_tflops; }
};

// The block's predicted time in ms: its FLOPs over its dtype's peak at its
// efficiency; 0 when it cannot run.
double predicted_block_ms(const LayoutPrediction& p, const ModelGpu& gpu);
// From the peaks table: flop_per_exp = bf16 TFLOPS / (SMs x clock) / 16.
ModelGpu model_gpu(const GpuPeaks& peaks);

// Throws std::invalid_argument for a batch or seq below 1. An infeasible
// layout gets feasible = false and nothing else.
LayoutPrediction predict_layout(const HeadLayout& layout, std::int64_t batch, std::int64_t seq, bool causal,
                                GemmDtype dtype, const ModelGpu& gpu);

}  // namespace redline
