// gemm_bench: matmul throughput per dtype through cuBLASLt, and why a shape
// is slower than its neighbour (tile and wave quantization).
//   predict  the quantization model alone, for any GPU, with or without one
//   peak     the maximum achievable matmul FLOPS per dtype, plus the HBM and
//            FP32 roofline ceilings
//   sweep    TFLOPS over any dimension beside the model's prediction
//   model    every GEMM of one transformer training step, and padding advice
// This file is the command line only; each subcommand has its own file
// (bench/gemm/subcommands.hpp). The measuring ones run their shapes as cases
// of the GPU case runner, through Google Benchmark, so --benchmark_* flags
// work as C++ users expect.
#include <iostream>

#include "bench/gemm/subcommands.hpp"
#include "bench/tool_columns.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/report/schema_document.hpp"
#include "harness/report/tool_main.hpp"

#if defined(REDLINE_HAVE_GBENCH_FLAGS)
#include "harness/report/gbench_args.hpp"
#endif

using namespace redline;
using namespace redline::gemm;

namespace {

// --m, --n and --k of the shapes predict and sweep take, each required.
void add_shape_axes(CLI::App& sub, std::string& m, std::string& n, std::string& k) {
  sub.add_option("--m", m, "Rows of C: N, or a sweep 1,2,4 / A:B (step 1) / A:B:STEP / A:B:xF")
      ->required()
      ->type_name("AXIS");
  sub.add_option("--n", n, "Columns of C (same forms)")->required()->type_name("AXIS");
  sub.add_option("--k", k, "Reduction dimension (same forms)")->required()->type_name("AXIS");
}

CLI::App* add_predict(CLI::App& app, PredictFlags& pf) {
  CLI::App* predict = app.add_subcommand(
      "predict",
      "Tile and wave quantization model alone, for any GPU (no GPU needed): tiles, waves, tile, wave and "
      "predicted efficiency per shape; shapes losing more than 10% get the nearest larger size that recovers.");
  add_shape_axes(*predict, pf.m, pf.n, pf.k);
  predict->add_option("--tile", pf.tile, "C tile one CTA computes, ROWSxCOLS (e.g. 128x256)")->required()->type_name("RxC");
  predict->add_option("--sms", pf.sms, "SM count (overrides --gpu's)")->type_name("S");
  predict->add_option("--gpu", pf.gpu, "Take the SM count from the table: A100, H100, H200, B200")->type_name("NAME");
  predict->add_option("--ctas-per-sm", pf.ctas_per_sm, "CTAs resident per SM (default 1)")->type_name("C");
  predict->add_option("--split-k", pf.split_k, "Split-K factor: tiles x this many CTAs (default 1)")->type_name("S");
  predict->add_option("--pad-dim", pf.pad_dim, "Dimension padding advice grows: m or n (default: the swept one, else n)")
      ->type_name("m|n");
  add_output_flags(*predict, pf.output);
  return predict;
}

// A subcommand that measures, with the flags they share.
CLI::App* add_measuring(CLI::App& app, const char* name, const char* description, MeasureFlags& f) {
  CLI::App* sub = app.add_subcommand(name, description);
  add_measure_flags(*sub, f, "bf16");
  return sub;
}

CLI::App* add_peak(CLI::App& app, PeakFlags& f) {
  CLI::App* peak = add_measuring(
      app, "peak",
      "Maximum achievable matmul TFLOPS per dtype (best shape, % of the datasheet, clocks), plus the HBM copy and "
      "FP32 FMA ceilings. The quick search (default) aims at shapes the quantization model says lose nothing.",
      f.measure);
  peak->add_option("--search", f.search,
                   "quick (default), exhaustive (every --m x --n x --k), or check (both, and how close quick came)")
      ->type_name("quick|exhaustive|check");
  peak->add_option("--m", f.m, "Exhaustive/check search range of M (default 2048:16384:2048)")->type_name("AXIS");
  peak->add_option("--n", f.n, "Exhaustive search range of N")->type_name("AXIS");
  peak->add_option("--k", f.k, "Exhaustive search range of K")->type_name("AXIS");
  peak->add_option("--sustain", f.sustain,
                   "Time the search's best 3 shapes again over S seconds of back-to-back GEMMs, no noise stop; "
                   "the MAMF is the best of these (default 1; 0: the search's best short sample)")
      ->type_name("S");
  peak->add_flag("--no-roofline", f.no_roofline, "Skip the HBM copy and FP32 FMA ceilings");
  peak->add_option("--datasheet-gbps", f.measure.datasheet_gbps,
                   "Override the datasheet HBM GB/s the copy ceiling's percentage uses (the FMA one: "
                   "--datasheet-tflops with --dtype fp32)")
      ->type_name("X");
  return peak;
}

CLI::App* add_sweep(CLI::App& app, SweepFlags& f) {
  CLI::App* sweep = add_measuring(
      app, "sweep",
      "TFLOPS over any dimension with the tile cuBLASLt chose, split-K, tiles, waves, tile/wave efficiency and the "
      "predicted TFLOPS; flags points losing more than 10% and the nearest larger size that recovers. Sweeping M or N "
      "alone gives the saturation: the tokens per micro-batch that fill the GPU (PyTorch's forward GEMM has them in "
      "N).",
      f.measure);
  add_shape_axes(*sweep, f.m, f.n, f.k);
  sweep->add_option("--batch", f.batch,
                    "Strided-batched GEMMs of each shape per call, dense and back to back (default 1; at most "
                    "65535): attention's per-head GEMMs, as attention_bench sweep --unfused-gemms lists them")
      ->type_name("B");
  return sweep;
}

CLI::App* add_model(CLI::App& app, ModelFlags& f) {
  CLI::App* model = add_measuring(
      app, "model",
      "Every GEMM of one transformer training step (QKV, attention out, FFN up/gate/down, logits; forward and both "
      "backward GEMMs) timed, the step's GEMM time and TFLOPS, and measured padding advice for vocab, ffn, hidden.",
      f.measure);
  model->add_option("--hidden", f.hidden, "Hidden size H")->required()->type_name("H");
  model->add_option("--heads", f.heads, "Attention heads")->required()->type_name("A");
  model->add_option("--kv-heads", f.kv_heads, "KV heads (grouped-query attention; default: as many as --heads)")
      ->type_name("K");
  model->add_option("--ffn", f.ffn, "FFN width F")->required()->type_name("F");
  model->add_option("--vocab", f.vocab, "Vocabulary size V")->required()->type_name("V");
  model->add_option("--seq", f.seq, "Sequence length")->required()->type_name("S");
  model->add_option("--mbs", f.mbs, "Micro-batch size")->required()->type_name("B");
  model->add_option("--tp", f.tp, "Tensor-parallel size (default 1)")->type_name("T");
  model->add_option("--layers", f.layers, "Layers per step (default 1)")->type_name("L");
  model->add_flag("--swiglu", f.swiglu, "SwiGLU FFN: adds the gate projection");
  return model;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GEMM throughput and its tile and wave quantization.", "gemm_bench"};
  app.footer(columns_help(tool_declaration("gemm_bench")));
  app.require_subcommand(1);
#if defined(REDLINE_HAVE_GBENCH_FLAGS)
  BenchmarkArgs args;
  try {
    args = split_benchmark_args(argc, argv, "gemm_bench");
  } catch (const UsageError& e) {
    std::cerr << "gemm_bench: " << e.what() << "\n";
    return kExitUsage;
  }
  std::vector<char*> ours = args.ours;
#else
  // Built without Google Benchmark: predict only, and no --benchmark_* flags.
  std::vector<char*> ours(argv, argv + argc);
#endif
  install_interrupt_handlers();

  PredictFlags predict_flags;
  PeakFlags peak_flags;
  SweepFlags sweep_flags;
  ModelFlags model_flags;
  CLI::App* predict = add_predict(app, predict_flags);
  CLI::App* peak = add_peak(app, peak_flags);
  CLI::App* sweep = add_sweep(app, sweep_flags);
  CLI::App* model = add_model(app, model_flags);

  return run_tool(app, static_cast<int>(ours.size()), ours.data(), [&] {
#if defined(REDLINE_HAVE_GEMM_GPU)
    initialize_google_benchmark(args);
#endif
    if (predict->parsed()) return run_predict(predict_flags);
#if defined(REDLINE_HAVE_GEMM_GPU)
    if (peak->parsed()) {
      const auto given = flags_given(*peak);
      for (const char* flag : {"--m", "--n", "--k"})
        if (peak_flags.grid_flag.empty() && given.count(flag)) peak_flags.grid_flag = flag;
      return run_peak(peak_flags, args);
    }
    if (sweep->parsed()) return run_sweep(sweep_flags, args);
    if (model->parsed()) return run_model(model_flags, args);
#else
    if (peak->parsed() || sweep->parsed() || model->parsed())
      throw CannotRun("this gemm_bench was built without CUDA, cuBLASLt or Google Benchmark; only predict runs");
#endif
    throw UsageError("give a subcommand: predict, peak, sweep or model");
  });
}
