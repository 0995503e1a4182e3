// gemm_bench: matmul throughput per dtype through cuBLASLt, and why a shape
// is slower than its neighbour (tile and wave quantization).
//   predict  the quantization model alone, for any GPU, with or without one
//   peak     the maximum achievable matmul FLOPS per dtype, plus the HBM and
//            FP32 roofline ceilings
//   sweep    TFLOPS over any dimension beside the model's prediction
//   model    every GEMM of one transformer training step, and padding advice
// The measuring subcommands run their shapes through Google Benchmark
// (bench/gemm_runner.hpp), so --benchmark_* flags work as C++ users expect.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "harness/core/atomic_file.hpp"
#include "harness/core/axis.hpp"
#include "harness/core/clock.hpp"
#include "harness/core/environment.hpp"
#include "harness/gemm/gemm_dtype.hpp"
#include "harness/gemm/gemm_model.hpp"
#include "harness/gemm/gpu_peaks.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/measure/saturation.hpp"
#include "harness/gemm/transformer_gemms.hpp"
#include "harness/gemm/gemm_sweep_analysis.hpp"
#include "harness/report/tool_main.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

#if defined(REDLINE_HAVE_GEMM_GPU)
#include "bench/gemm_runner.hpp"
#include "kernels/device_query.cuh"
#include "kernels/gemm_lt.cuh"
#include "kernels/gpu_availability.cuh"
#endif

using namespace redline;

namespace {

struct PredictFlags {
  std::string m, n, k, tile, sms, gpu, ctas_per_sm = "1", split_k = "1", pad_dim;
  OutputOptions output;
};

// cuBLASLt takes 64-bit dimensions, but no single GEMM of a training step
// comes near 2^31 along one edge; the cap keeps tile counts far from overflow.
constexpr std::int64_t kMaxDim = (std::int64_t{1} << 31) - 1;
constexpr std::size_t kMaxPoints = 100000;

std::vector<std::int64_t> dim_axis(const char* flag, const std::string& text) {
  auto values = parse_axis(flag, text, AxisUnit::count);
  if (values.front() < 1) throw UsageError(flag, text, "GEMM dimensions must be at least 1");
  if (values.back() > kMaxDim) throw UsageError(flag, text, "GEMM dimensions must be at most 2^31-1");
  return values;
}

std::string percent_text(double fraction) { return format_number(100 * fraction, 1) + "%"; }

GemmDim pad_dim(const PredictFlags& f, std::size_t m_count, std::size_t n_count) {
  if (f.pad_dim == "m") return GemmDim::m;
  if (f.pad_dim == "n") return GemmDim::n;
  if (!f.pad_dim.empty()) throw UsageError("--pad-dim", f.pad_dim, "must be m or n (K does not change the tile count)");
  // The dimension the user sweeps is the one being chosen; otherwise N, where
  // vocab and FFN widths sit in activations x weights.
  return m_count > 1 && n_count == 1 ? GemmDim::m : GemmDim::n;
}

int run_predict(const PredictFlags& f) {
  const auto ms = dim_axis("--m", f.m), ns = dim_axis("--n", f.n), ks = dim_axis("--k", f.k);
  if (ms.size() * ns.size() * ks.size() > kMaxPoints)
    throw UsageError("--m/--n/--k give " + std::to_string(ms.size() * ns.size() * ks.size()) +
                     " shapes; at most " + std::to_string(kMaxPoints));
  const auto tile = parse_tile(f.tile);
  if (!tile) throw UsageError("--tile", f.tile, "must be ROWSxCOLS of the C tile, e.g. 128x256");

  GemmProblem base;
  base.tile = *tile;
  std::optional<GpuPeaks> gpu;
  if (!f.gpu.empty()) {
    gpu = lookup_gpu_peaks(f.gpu);
    if (!gpu) throw UsageError("--gpu", f.gpu, "unknown GPU (known: " + known_gpu_models() + "); give --sms instead");
    base.sm_count = gpu->sm_count;
  }
  // --sms wins over the table: a MIG slice or a GPU with SMs disabled.
  if (!f.sms.empty()) base.sm_count = static_cast<int>(parse_count_between("--sms", f.sms, 1, 100000));
  if (base.sm_count == 0) throw UsageError("give the SM count with --sms S or a GPU with --gpu NAME");
  base.ctas_per_sm = static_cast<int>(parse_count_between("--ctas-per-sm", f.ctas_per_sm, 1, 64));
  base.split_k = static_cast<int>(parse_count_between("--split-k", f.split_k, 1, 1024));
  const GemmDim dim = pad_dim(f, ms.size(), ns.size());
  const char* dim_name = dim == GemmDim::m ? "m" : "n";
  {
    // The largest shape has the most tiles: if its count fits, every one does.
    GemmProblem largest = base;
    largest.m = ms.back(), largest.n = ns.back(), largest.k = ks.back();
    try {
      predict_gemm(largest);
    } catch (const std::invalid_argument& e) {
      throw UsageError("--m/--n/--tile/--split-k",
                       std::to_string(largest.m) + "/" + std::to_string(largest.n) + "/" + tile_text(base.tile) + "/" +
                           std::to_string(base.split_k),
                       e.what());
    }
  }
  validate_output_paths(f.output);

  Report report = start_report("gemm_bench", capture_environment());
  std::size_t flagged = 0;
  std::vector<std::pair<std::string, std::string>> advice_lines;
  for (auto m : ms)
    for (auto n : ns)
      for (auto k : ks) {
        GemmProblem p = base;
        p.m = m, p.n = n, p.k = k;
        const GemmPrediction r = predict_gemm(p);
        Row row;
        row.param("m", std::to_string(m)).param("n", std::to_string(n)).param("k", std::to_string(k));
        row.param("tile", tile_text(p.tile)).param("sms", std::to_string(p.sm_count));
        row.param("ctas_per_sm", std::to_string(p.ctas_per_sm)).param("split_k", std::to_string(p.split_k));
        row.metric("tiles", static_cast<double>(r.tiles)).metric("waves", r.waves);
        row.metric("full_waves", static_cast<double>(r.full_waves));
        row.metric("tile_efficiency", r.tile_efficiency).metric("wave_efficiency", r.wave_efficiency);
        row.metric("predicted_efficiency", r.predicted_efficiency);
        if (r.predicted_efficiency < kQuantizationLossThreshold) {
          ++flagged;
          row.note = "loses " + percent_text(1 - r.predicted_efficiency);
          if (const auto a = nearest_recovering_size(p, dim)) {
            // The gain is in efficiency: work done per unit of time. The
            // padded shape takes no less time; it does more in it.
            const std::string time = a->after.full_waves == r.full_waves
                                         ? "same predicted time, " + std::to_string(r.full_waves) + " waves"
                                         : std::to_string(a->after.full_waves) + " waves instead of " +
                                               std::to_string(r.full_waves);
            row.note += std::string("; ") + dim_name + " " + std::to_string(a->to) + ": efficiency +" +
                        percent_text(a->gain) + ", " +
                        (a->after.full_waves == r.full_waves ? std::string("same time") : time);
            advice_lines.emplace_back("pad m=" + std::to_string(m) + " n=" + std::to_string(n),
                                      std::string(dim_name) + " -> " + std::to_string(a->to) +
                                          ": predicted efficiency " + format_number(r.predicted_efficiency, 3) +
                                          " -> " + format_number(a->after.predicted_efficiency, 3) + " (+" +
                                          percent_text(a->gain) + "; " + time + ")");
          }
        }
        report.rows.push_back(std::move(row));
      }

  report.summary.emplace_back(
      "model", "tile " + tile_text(base.tile) + ", " + std::to_string(base.sm_count) + " SMs x " +
                   std::to_string(base.ctas_per_sm) + " CTA/SM = " + std::to_string(base.sm_count * base.ctas_per_sm) +
                   " tiles per wave, split-K " + std::to_string(base.split_k) +
                   (gpu ? ", SM count of " + gpu->model : std::string()));
  report.summary.emplace_back("flagged", std::to_string(flagged) + " of " + std::to_string(report.rows.size()) +
                                             " shapes lose more than " +
                                             percent_text(1 - kQuantizationLossThreshold) + " to quantization");
  report.summary.insert(report.summary.end(), advice_lines.begin(), advice_lines.end());
  write_reports(report, f.output);
  return kExitOk;
}

// --- the measuring subcommands ---------------------------------------------

// Flags every measuring subcommand shares.
struct MeasureFlags {
  std::string dtype = "bf16", layout = "tn", algos = "1", device = "0";
  std::string warmup = "0.2", first_warmup = "1", min_time = "0.25", max_time = "2", target_cv = "0.01",
              min_reps = "10", max_reps = "500";
  std::string gpu, datasheet_tflops;
  std::string datasheet_gbps;  // peak only: the HBM ceiling's datasheet
  bool progress = false;
  OutputOptions output;
};

void add_measure_flags(CLI::App& app, MeasureFlags& f, const char* default_dtype) {
  f.dtype = default_dtype;
  app.add_option("--dtype", f.dtype, "Comma list or all: " + known_gemm_dtypes())->type_name("LIST");
  app.add_option("--layout", f.layout, "tn (default: A transposed, as FP8 needs) or nn")->type_name("tn|nn");
  app.add_option("--algos", f.algos,
                 "cuBLASLt heuristic candidates to time, keeping the fastest (default 1: the heuristic's choice, "
                 "as torch.matmul runs)")
      ->type_name("N");
  app.add_option("--device", f.device, "CUDA device index (default 0)")->type_name("I");
  app.add_option("--warmup", f.warmup, "Warm-up seconds per shape (default 0.2)")->type_name("S");
  app.add_option("--first-warmup", f.first_warmup,
                 "Warm-up seconds of the first shape, so clocks are up (default 1, at least --warmup)")
      ->type_name("S");
  app.add_option("--min-time", f.min_time,
                 "Sample each shape at least this long before the noise stop may end it (default 0.25; --max-time "
                 "and --max-reps still end it): a power-capped GPU's clock swings over tens of ms, and a shorter "
                 "window can time a burst")
      ->type_name("S");
  app.add_option("--max-time", f.max_time, "Cap on the timed samples per shape, seconds (default 2)")->type_name("S");
  app.add_option("--target-cv", f.target_cv, "Stop sampling a shape once the CV is below this (default 0.01)")
      ->type_name("X");
  app.add_option("--min-reps", f.min_reps, "Timed samples per shape, at least (default 10)")->type_name("N");
  app.add_option("--max-reps", f.max_reps, "Timed samples per shape, at most (default 500)")->type_name("N");
  app.add_option("--gpu", f.gpu, "Datasheet row to compare with (A100, H100, H200, B200; default: the GPU's name)")
      ->type_name("NAME");
  app.add_option("--datasheet-tflops", f.datasheet_tflops,
                 "Override the datasheet dense TFLOPS the percentages use (one dtype at a time)")
      ->type_name("X");
  app.add_flag("--progress", f.progress, "Progress lines on stderr even when it is not a terminal");
  add_output_flags(app, f.output);
}

// The flags of each measuring subcommand.
struct PeakFlags {
  MeasureFlags measure;
  std::string search = "quick", m = "2048:16384:2048", n = "2048:16384:2048", k = "2048:16384:2048";
  std::string sustain = "1";
  bool no_roofline = false;
};

struct SweepFlags {
  MeasureFlags measure;
  std::string m, n, k;
};

struct ModelFlags {
  MeasureFlags measure;
  std::string hidden, heads, ffn, vocab, seq, mbs, tp = "1", layers = "1";
  bool swiglu = false;
};

// The --benchmark_* flags gemm_bench takes, with Google Benchmark's meanings.
// Google Benchmark runs the cases, but redline's measurement decides warm-up,
// iterations and time, and redline repeats and reports the batches, so only
// these are accepted; the rest would either do nothing or run each case's
// whole measurement again.
//   --benchmark_filter=REGEX          passed to Google Benchmark
//   --benchmark_counters_tabular=B, --benchmark_color=B   for the console report
//   --benchmark_format=console|json   Google Benchmark's report on stdout
//   --benchmark_out=FILE, --benchmark_out_format=json|console (written at the end, atomically)
//   --benchmark_repetitions=N         whole batches, N times
struct BenchmarkArgs {
  std::vector<char*> ours, google;
  std::string format, out, out_format = "json";
  std::string color = "auto";  // --benchmark_color, for the console report on stdout
  bool tabular = false;        // --benchmark_counters_tabular
  int repetitions = 1;
};

void check_benchmark_flag(const std::string& flag, const std::string& value, BenchmarkArgs& args, char* arg) {
  auto one_of = [&](std::initializer_list<const char*> allowed) {
    std::string list;
    for (const char* a : allowed) {
      if (value == a) return;
      list += std::string(list.empty() ? "" : ", ") + a;
    }
    throw UsageError(flag, value, "must be one of " + list);
  };
  if (flag == "--benchmark_filter") {
    // Google Benchmark compiles the filter as an extended std::regex; one it
    // cannot compile would run nothing, silently.
    try {
      std::regex(value, std::regex::extended);
    } catch (const std::regex_error& e) {
      throw UsageError(flag, value, std::string("is not a valid extended regular expression: ") + e.what());
    }
    args.google.push_back(arg);
  } else if (flag == "--benchmark_counters_tabular") {
    one_of({"true", "false", "yes", "no"});
    args.tabular = value == "true" || value == "yes";
  } else if (flag == "--benchmark_color") {
    one_of({"true", "false", "yes", "no", "auto"});
    args.color = value;
  } else if (flag == "--benchmark_format") {
    one_of({"console", "json"});
    args.format = value;
  } else if (flag == "--benchmark_out_format") {
    one_of({"json", "console"});  // Google Benchmark's CSV is deprecated; redline's --csv writes CSV
    args.out_format = value;
  } else if (flag == "--benchmark_out") {
    validate_output_path("--benchmark_out", value);
    args.out = value;
  } else if (flag == "--benchmark_repetitions") {
    args.repetitions = static_cast<int>(parse_count_between("--benchmark_repetitions", value, 1, 1000));
  } else {
    throw UsageError(flag, value,
                     "not taken by gemm_bench, whose own measurement decides warm-up, iterations and time; it takes "
                     "--benchmark_filter, _format, _out, _out_format, _repetitions, _counters_tabular, _color");
  }
}

// Google Benchmark also reads BENCHMARK_* environment variables; these keep
// the ones that would bypass the list above (its own repetitions, output
// file, listing instead of running) at their neutral values. Given first, so
// the user's --benchmark_filter still applies.
char* kNeutralGoogleFlags[] = {
    const_cast<char*>("--benchmark_out="),
    const_cast<char*>("--benchmark_repetitions=1"),
    const_cast<char*>("--benchmark_list_tests=false"),
    const_cast<char*>("--benchmark_min_warmup_time=0"),
    const_cast<char*>("--benchmark_enable_random_interleaving=false"),
    const_cast<char*>("--benchmark_report_aggregates_only=false"),
    const_cast<char*>("--benchmark_display_aggregates_only=false"),
};

BenchmarkArgs split_benchmark_args(int argc, char** argv) {
  BenchmarkArgs args;
  args.ours.push_back(argv[0]);
  args.google.push_back(argv[0]);
  for (char* neutral : kNeutralGoogleFlags) args.google.push_back(neutral);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!arg.starts_with("--benchmark_")) {
      args.ours.push_back(argv[i]);
      continue;
    }
    const std::size_t eq = arg.find('=');
    if (eq == std::string_view::npos)
      throw UsageError(std::string(arg), "", "give it as " + std::string(arg) + "=VALUE, as Google Benchmark does");
    check_benchmark_flag(std::string(arg.substr(0, eq)), std::string(arg.substr(eq + 1)), args, argv[i]);
  }
  return args;
}

#if defined(REDLINE_HAVE_GEMM_GPU)

std::vector<GemmDtype> dtypes_of(const MeasureFlags& f) { return parse_gemm_dtypes("--dtype", f.dtype); }

GemmLayout layout_of(const MeasureFlags& f) {
  const auto layout = parse_gemm_layout(f.layout);
  if (!layout) throw UsageError("--layout", f.layout, "must be tn or nn");
  return *layout;
}

double positive_seconds(const char* flag, const std::string& text) {
  const double value = parse_number(flag, text);
  if (!(value >= 0) || value > 3600) throw UsageError(flag, text, "must be between 0 and 3600 seconds");
  return value;
}

MeasurementPolicy policy_of(const MeasureFlags& f) {
  MeasurementPolicy policy;
  policy.warmup_iterations = 2;
  policy.warmup_seconds = positive_seconds("--warmup", f.warmup);
  policy.max_seconds = positive_seconds("--max-time", f.max_time);
  // Beyond --max-time it is not refused: the cap ends the samples (a check run's --max-time 0.3 works).
  policy.min_seconds = positive_seconds("--min-time", f.min_time);
  policy.target_cv = parse_number("--target-cv", f.target_cv);
  if (!(policy.target_cv >= 0) || policy.target_cv >= 1)
    throw UsageError("--target-cv", f.target_cv, "must be at least 0 and below 1 (0: no noise stop)");
  policy.min_repetitions = static_cast<int>(parse_count_between("--min-reps", f.min_reps, 1, 1000000));
  policy.max_repetitions = static_cast<int>(parse_count_between("--max-reps", f.max_reps, 1, 1000000));
  if (policy.max_repetitions < policy.min_repetitions)
    throw UsageError("--max-reps", f.max_reps, "must be at least --min-reps (" + f.min_reps + ")");
  return policy;
}

// The percent-of-datasheet figures: the table row for --gpu or the detected
// GPU, with --datasheet-tflops replacing the dtype's rate when given. The
// flags are checked before any GPU is looked for; the detected name comes later.
struct DatasheetChoice {
  std::optional<GpuPeaks> named;        // --gpu
  std::optional<double> tflops;         // --datasheet-tflops
  std::optional<PeakDtype> dtype;       // the one dtype it applies to
  std::optional<double> hbm_gbps;       // --datasheet-gbps
};

DatasheetChoice datasheet_choice(const MeasureFlags& f, const std::vector<GemmDtype>& dtypes) {
  DatasheetChoice choice;
  if (!f.gpu.empty()) {
    choice.named = lookup_gpu_peaks(f.gpu);
    if (!choice.named) throw UsageError("--gpu", f.gpu, "unknown GPU (known: " + known_gpu_models() + ")");
  }
  if (!f.datasheet_tflops.empty()) {
    choice.tflops = parse_number("--datasheet-tflops", f.datasheet_tflops);
    if (!(*choice.tflops > 0)) throw UsageError("--datasheet-tflops", f.datasheet_tflops, "must be positive");
    if (dtypes.size() != 1)
      throw UsageError("--datasheet-tflops", f.datasheet_tflops, "applies to one --dtype at a time");
    choice.dtype = gemm_dtype_info(dtypes.front()).peak;
  }
  if (!f.datasheet_gbps.empty()) {
    choice.hbm_gbps = parse_number("--datasheet-gbps", f.datasheet_gbps);
    if (!(*choice.hbm_gbps > 0)) throw UsageError("--datasheet-gbps", f.datasheet_gbps, "must be positive");
  }
  return choice;
}

std::optional<GpuPeaks> datasheet_of(const DatasheetChoice& choice, const std::string& detected_name) {
  std::optional<GpuPeaks> peaks = choice.named ? choice.named : lookup_gpu_peaks(detected_name);
  if (choice.hbm_gbps) {
    if (!peaks) peaks = GpuPeaks{detected_name + " (--datasheet-gbps)"};
    peaks->hbm_GBps = *choice.hbm_gbps;
  }
  if (!choice.tflops) return peaks;
  if (!peaks) peaks = GpuPeaks{detected_name + " (--datasheet-tflops)"};
  switch (*choice.dtype) {
    case PeakDtype::fp32: peaks->fp32_tflops = *choice.tflops; break;
    case PeakDtype::tf32: peaks->tf32_tflops = *choice.tflops; break;
    case PeakDtype::fp16: peaks->fp16_tflops = *choice.tflops; break;
    case PeakDtype::bf16: peaks->bf16_tflops = *choice.tflops; break;
    case PeakDtype::fp8: peaks->fp8_tflops = *choice.tflops; break;
  }
  return peaks;
}

std::string shape_text(const GemmSize& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

GemmSize size_of(const Row& row) {
  auto dim = [&](const char* name) { return std::stoll(row.param_value(name).value_or("0")); };
  return {dim("m"), dim("n"), dim("k")};
}

bool is_ok_gemm_row(const Row& row) { return row.status == "ok" && row.metric_value("tflops").has_value(); }

// Exit status of a measuring run: 1 when any result failed verification, or
// when GEMM rows exist and none of them ran ok.
int exit_status(const Report& report) {
  auto any = [&](const char* status, bool gemm_only) {
    return std::any_of(report.rows.begin(), report.rows.end(), [&](const Row& r) {
      return r.status == status && (!gemm_only || r.param_value("m"));
    });
  };
  // Shapes left out by --benchmark_filter are skipped, not failed.
  const bool has_gemm_rows = std::any_of(report.rows.begin(), report.rows.end(), [](const Row& r) {
    return r.param_value("m").has_value() && r.status != "skipped";
  });
  if (any("wrong", false)) {
    std::cerr << "gemm_bench: FAILED: a result did not match its reference (status wrong)\n";
    return kExitCheckFailed;
  }
  if (interrupted()) return kExitInterrupted;
  if (has_gemm_rows && !any("ok", true)) {
    std::cerr << "gemm_bench: FAILED: no GEMM shape ran ok (the rows' notes say why)\n";
    return kExitCheckFailed;
  }
  return kExitOk;
}

// What every measuring subcommand starts with: a usable GPU, the report with
// the environment, and the runner; and what it ends with (finish_session).
struct Session {
  Report report;
  OutputOptions output;
  std::unique_ptr<benchmark::BenchmarkReporter> display;    // --benchmark_format
  std::unique_ptr<benchmark::BenchmarkReporter> out_file;   // --benchmark_out
  // Written atomically at the end. On the heap: out_file keeps a pointer to
  // it, and a Session is returned by value (a move must not leave it dangling).
  std::unique_ptr<std::ostringstream> out_text = std::make_unique<std::ostringstream>();
  std::string out_path;
  std::unique_ptr<Progress> progress;
  std::unique_ptr<GemmRunner> runner;
  std::vector<GemmDtype> dtypes;
  GemmLayout layout = GemmLayout::tn;
  MeasurementPolicy policy;  // from the flags
};

// Google Benchmark's own reporter for `format`, writing to `out`. The
// console one takes --benchmark_color and --benchmark_counters_tabular on a
// terminal; a file gets neither colour nor, as Google Benchmark does it, its
// errors anywhere but the file.
std::unique_ptr<benchmark::BenchmarkReporter> google_reporter(const std::string& format, std::ostream& out,
                                                               const BenchmarkArgs& args, bool to_file) {
  std::unique_ptr<benchmark::BenchmarkReporter> reporter;
  if (format == "json") reporter = std::make_unique<benchmark::JSONReporter>();
  if (format == "console") {
    int options = args.tabular ? benchmark::ConsoleReporter::OO_Tabular : benchmark::ConsoleReporter::OO_None;
    const bool color = args.color == "auto" ? isatty(STDOUT_FILENO) != 0 : args.color == "true" || args.color == "yes";
    if (color && !to_file) options |= benchmark::ConsoleReporter::OO_Color;
    reporter = std::make_unique<benchmark::ConsoleReporter>(
        static_cast<benchmark::ConsoleReporter::OutputOptions>(options));
  }
  if (reporter) {
    reporter->SetOutputStream(&out);
    reporter->SetErrorStream(to_file ? &out : &std::cerr);
  }
  return reporter;
}

// The dtypes cuBLASLt can run on none of the shapes (FP8 with nn, or with K
// or M never a multiple of 16), each with the reason. When no requested dtype
// can run, that is bad input; otherwise those few are skipped with the reason,
// so `--dtype all --layout nn` still measures the rest.
std::vector<std::pair<GemmDtype, std::string>> unrunnable_dtypes(const std::vector<GemmDtype>& dtypes,
                                                                  GemmLayout layout,
                                                                  const std::vector<GemmSize>& shapes) {
  std::vector<std::pair<GemmDtype, std::string>> unrunnable;
  for (GemmDtype dtype : dtypes) {
    std::optional<std::string> reason;
    bool runnable = false;
    for (const auto& shape : shapes) {
      const auto why = gemm_unsupported_reason(dtype, layout, shape.m, shape.n, shape.k);
      runnable = runnable || !why;
      if (why && !reason) reason = why;
    }
    if (!runnable && reason) unrunnable.emplace_back(dtype, "no shape can run: " + *reason);
  }
  if (!dtypes.empty() && unrunnable.size() == dtypes.size())
    throw UsageError("--dtype", gemm_dtype_info(unrunnable.front().first).name, unrunnable.front().second);
  return unrunnable;
}

// The compute capability a dtype's tensor-core GEMMs need (FP8: Ada/Hopper;
// bf16 and tf32: Ampere); 0: any GPU.
int required_compute_capability(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::fp8_e4m3:
    case GemmDtype::fp8_e4m3_e5m2: return 89;
    case GemmDtype::bf16:
    case GemmDtype::tf32: return 80;
    default: return 0;
  }
}

// `shapes`: the shapes the run will measure, known before it starts.
Session start_session(MeasureFlags& f, const BenchmarkArgs& bench_args, const std::vector<GemmSize>& shapes) {
  Session s;
  s.dtypes = dtypes_of(f);
  s.layout = layout_of(f);
  s.policy = policy_of(f);
  const auto unrunnable = unrunnable_dtypes(s.dtypes, s.layout, shapes);
  const int device = static_cast<int>(parse_count_between("--device", f.device, 0, 1024));
  const int algos = static_cast<int>(parse_count_between("--algos", f.algos, 1, 64));
  const double first_warmup = positive_seconds("--first-warmup", f.first_warmup);
  const DatasheetChoice datasheet = datasheet_choice(f, s.dtypes);
  s.output = f.output;
  s.display = google_reporter(bench_args.format, std::cout, bench_args, false);
  // Google Benchmark's report owns stdout: the table would corrupt it.
  if (s.display) s.output.quiet = true;
  validate_output_paths(s.output);
  if (const auto reason = no_usable_gpu_reason(device)) throw CannotRun(*reason);

  Environment env = capture_environment();
  add_cuda_gpu_info(env);
  s.report = start_report("gemm_bench", env);
  const DeviceProperties props = query_device_properties(device);
  auto skip = [&](GemmDtype dtype, const std::string& why) {
    Row row;
    row.param("dtype", gemm_dtype_info(dtype).name).param("layout", gemm_layout_name(s.layout));
    row.status = "skipped";
    row.note = why;
    s.report.rows.push_back(row);
    s.report.summary.emplace_back(std::string(gemm_dtype_info(dtype).name), "skipped: " + why);
  };
  // Dtypes this GPU has no tensor-core path for, or that no shape suits,
  // are skipped, with the reason.
  const int cc = props.compute_capability_major * 10 + props.compute_capability_minor;
  std::vector<GemmDtype> runnable;
  for (GemmDtype dtype : s.dtypes) {
    const int needed = required_compute_capability(dtype);
    const auto misfit = std::find_if(unrunnable.begin(), unrunnable.end(), [&](const auto& u) { return u.first == dtype; });
    if (misfit != unrunnable.end())
      skip(dtype, misfit->second);
    else if (cc < needed)
      skip(dtype, "needs compute capability " + std::to_string(needed / 10) + "." + std::to_string(needed % 10) +
                      "; this GPU is " + props.compute_capability());
    else
      runnable.push_back(dtype);
  }
  if (runnable.empty()) {
    std::string reasons;
    for (const Row& row : s.report.rows)
      reasons += (reasons.empty() ? "" : "; ") + row.param_value("dtype").value_or("?") + ": " + row.note;
    throw CannotRun("no requested dtype runs on " + props.name + " (" + reasons + ")");
  }
  s.dtypes = runnable;

  GemmRunnerOptions options;
  options.policy = s.policy;
  options.first_warmup_seconds = first_warmup;
  options.heuristic_candidates = algos;
  options.device = device;
  options.repetitions = bench_args.repetitions;
  options.peaks = datasheet_of(datasheet, props.name);
  std::vector<benchmark::BenchmarkReporter*> forwards;
  if (s.display) forwards.push_back(s.display.get());
  if (!bench_args.out.empty()) {
    s.out_file = google_reporter(bench_args.out_format, *s.out_text, bench_args, true);
    s.out_path = bench_args.out;
    forwards.push_back(s.out_file.get());
  }
  s.progress = std::make_unique<Progress>(f.progress ? 1 : -1);
  s.runner = std::make_unique<GemmRunner>(options, forwards, *s.progress);
  s.report.summary.emplace_back("gpu", props.name + ", " + std::to_string(props.sm_count) + " SMs, cuBLASLt " +
                                           cublaslt_version());
  if (options.peaks)
    s.report.summary.emplace_back("datasheet", options.peaks->model + " (dense; --gpu / --datasheet-tflops / --datasheet-gbps override)");
  else
    s.report.summary.emplace_back("datasheet", "unknown for " + props.name + ": give --gpu or --datasheet-tflops");
  return s;
}

// Finishes Google Benchmark's documents, writes every report, and returns the
// exit status.
int finish_session(Session& s) {
  s.runner->finish();
  if (!s.out_path.empty()) write_file_atomically(s.out_path, s.out_text->str());
  write_reports(s.report, s.output);
  return exit_status(s.report);
}

void append(std::vector<Row>& to, std::vector<Row> rows) {
  for (auto& r : rows) to.push_back(std::move(r));
}

std::string clocks_text(const Row& row) {
  std::string text;
  if (const auto clock = row.metric_value("sm_clock_mhz_after")) text += format_number(*clock, 0) + " MHz";
  if (const auto power = row.metric_value("power_w_after"))
    text += std::string(text.empty() ? "" : ", ") + format_number(*power, 0) + " W";
  if (const auto temp = row.metric_value("temperature_c_after"))
    text += std::string(text.empty() ? "" : ", ") + format_number(*temp, 0) + " C";
  if (row.metric_value("throttled").value_or(0) > 0) text += ", throttled";
  return text.empty() ? "clocks unknown (no NVML)" : text;
}

// --- peak ---------------------------------------------------------------------


const Row* best_row(const std::vector<Row>& rows, GemmDtype dtype) {
  const Row* best = nullptr;
  for (const auto& row : rows)
    if (is_ok_gemm_row(row) && row.param_value("dtype") == gemm_dtype_info(dtype).name &&
        (!best || *row.metric_value("tflops") > *best->metric_value("tflops")))
      best = &row;
  return best;
}

std::vector<GemmCase> cases_of(const std::vector<GemmSize>& sizes, GemmDtype dtype, GemmLayout layout) {
  std::vector<GemmCase> cases;
  for (const auto& s : sizes) cases.push_back({s, dtype, layout, {}});
  return cases;
}

std::vector<GemmSize> sizes_of(const std::vector<Row>& rows) {
  std::vector<GemmSize> sizes;
  for (const auto& r : rows) sizes.push_back(size_of(r));
  return sizes;
}

// The --m x --n x --k grid, refused (exit 2) above kMaxPoints shapes before
// any of it is built.
std::vector<GemmSize> checked_grid(const std::string& m, const std::string& n, const std::string& k) {
  const auto ms = dim_axis("--m", m), ns = dim_axis("--n", n), ks = dim_axis("--k", k);
  const double count = static_cast<double>(ms.size()) * static_cast<double>(ns.size()) * static_cast<double>(ks.size());
  if (count > static_cast<double>(kMaxPoints))
    throw UsageError("--m/--n/--k give " + format_number(count, 0) + " shapes; at most " + std::to_string(kMaxPoints));
  return grid_shapes(ms, ns, ks);
}

// The quick search (harness/gemm/gemm_peak_search.hpp says why it finds the
// peak): coarse shapes, then wave-aligned ones around the best with its
// tile, then one step around the best.
std::vector<Row> quick_search(Session& s, GemmDtype dtype) {
  const int sms = s.runner->device().sm_count;
  std::vector<Row> rows = s.runner->run(cases_of(coarse_peak_shapes(), dtype, s.layout));
  if (const Row* best = best_row(rows, dtype); best && !interrupted()) {
    const auto tile_m = best->metric_value("tile_m"), tile_n = best->metric_value("tile_n");
    if (tile_m && tile_n) {
      const TileShape tile{static_cast<std::int64_t>(*tile_m), static_cast<std::int64_t>(*tile_n)};
      append(rows, s.runner->run(cases_of(unmeasured(wave_aligned_shapes(size_of(*best), tile, sms), sizes_of(rows)),
                                          dtype, s.layout)));
    }
  }
  if (const Row* best = best_row(rows, dtype); best && !interrupted())
    append(rows, s.runner->run(cases_of(unmeasured(neighbour_shapes(size_of(*best)), sizes_of(rows)), dtype, s.layout)));
  return rows;
}

// How many of a search's best shapes are timed again under sustained load.
constexpr std::size_t kSustainedShapes = 3;

// The search's best shapes timed again over `seconds` of back-to-back GEMMs
// with no noise stop (rows with timing=sustained); none when seconds is 0.
// Why: a GPU at its power limit (an H100 or H200 running GEMMs) swings its
// SM clock between about 1200 and 1980 MHz, and a short sample can land on a
// burst. Seen on an H200 with ten 2 ms samples per shape: the same bf16
// shapes read 705 or 808 TFLOPS by the phase they were caught in. --min-time
// narrows that, but the best of 40 figures is still the luckiest one, not
// the achievable rate; a median over a second of load is what a training
// step gets.
std::vector<Row> sustained_rows(Session& s, const std::vector<Row>& rows, GemmDtype dtype, double seconds) {
  if (seconds <= 0 || interrupted()) return {};
  std::vector<const Row*> ok;
  for (const auto& row : rows)
    if (is_ok_gemm_row(row) && row.param_value("dtype") == gemm_dtype_info(dtype).name) ok.push_back(&row);
  std::sort(ok.begin(), ok.end(),
            [](const Row* a, const Row* b) { return *a->metric_value("tflops") > *b->metric_value("tflops"); });
  std::vector<GemmCase> cases;
  for (const Row* row : ok) {
    const GemmSize size = size_of(*row);
    if (std::any_of(cases.begin(), cases.end(), [&](const GemmCase& c) { return c.size == size; })) continue;
    cases.push_back({size, dtype, s.layout, {{"timing", "sustained"}}});
    if (cases.size() == kSustainedShapes) break;
  }
  MeasurementPolicy sustained = s.policy;
  sustained.target_cv = 0;
  sustained.max_seconds = seconds;
  sustained.max_repetitions = 1000000;  // the time decides
  return s.runner->run(cases, sustained);
}

// The MAMF row of one search, under a fixed key (`result`) so nightly runs
// compare it even when the best shape moves, and its summary line. The
// figure is the best sustained row's when there are any (see
// sustained_rows), else the search's best.
std::optional<Row> mamf_row(Session& s, const std::vector<Row>& search, const std::vector<Row>& sustained,
                            GemmDtype dtype, const std::string& result, const std::string& summary_key,
                            double sustain_seconds) {
  const Row* search_best = best_row(search, dtype);
  const Row* sustained_best = best_row(sustained, dtype);
  const Row* best = sustained_best ? sustained_best : search_best;
  const std::string name = gemm_dtype_info(dtype).name;
  if (!best) {
    s.report.summary.emplace_back(summary_key, "no shape ran ok (see the rows' notes)");
    return std::nullopt;
  }
  Row mamf;
  mamf.param("dtype", name).param("layout", gemm_layout_name(s.layout)).param("result", result);
  for (const char* metric : {"tflops", "datasheet_pct", "time_us", "sm_clock_mhz_after", "power_w_after"})
    if (const auto v = best->metric_value(metric)) mamf.metric(metric, *v);
  std::string how;
  if (sustained_best) {
    how = "; sustained " + format_number(sustain_seconds, 2) + " s";
    const double burst = *search_best->metric_value("tflops"), held = *sustained_best->metric_value("tflops");
    if (burst > 1.02 * held)
      how += "; the search's short samples reached " + format_number(burst, 1) + " at " +
             shape_text(size_of(*search_best)) + " (a clock burst, not held)";
  }
  mamf.note = "best of " + std::to_string(search.size()) + " shapes: " + shape_text(size_of(*best)) + how;
  const auto pct = best->metric_value("datasheet_pct");
  s.report.summary.emplace_back(summary_key, format_number(*best->metric_value("tflops"), 1) + " TFLOPS at " +
                                                 shape_text(size_of(*best)) +
                                                 (pct ? " (" + format_number(*pct, 1) + "% of the datasheet)" : std::string()) +
                                                 "; " + clocks_text(*best) + how);
  return mamf;
}

int run_peak(PeakFlags& f, const BenchmarkArgs& bench_args) {
  if (f.search != "quick" && f.search != "exhaustive" && f.search != "check")
    throw UsageError("--search", f.search, "must be quick, exhaustive or check");
  const double sustain = positive_seconds("--sustain", f.sustain);
  std::vector<GemmSize> grid;
  if (f.search != "quick") grid = checked_grid(f.m, f.n, f.k);
  Session s = start_session(f.measure, bench_args, f.search == "quick" ? coarse_peak_shapes() : grid);
  for (GemmDtype dtype : s.dtypes) {
    if (interrupted()) break;
    const std::string name = gemm_dtype_info(dtype).name;
    if (f.search != "check") {
      std::vector<Row> rows =
          f.search == "exhaustive" ? s.runner->run(cases_of(grid, dtype, s.layout)) : quick_search(s, dtype);
      std::vector<Row> held = sustained_rows(s, rows, dtype, sustain);
      std::optional<Row> mamf = mamf_row(s, rows, held, dtype, "mamf", "mamf " + name, sustain);
      append(s.report.rows, std::move(rows));
      append(s.report.rows, std::move(held));
      if (mamf) s.report.rows.push_back(std::move(*mamf));
      continue;
    }
    // --search check: the quick search, then the exhaustive grid, in one
    // run, so the claim "within 2% of the exhaustive best in a fraction of
    // its time" is measured here, on this GPU.
    // Each side's time includes its sustained re-timing, and each side's
    // best is its sustained best (the figure its MAMF row reports).
    double t0 = steady_seconds();
    std::vector<Row> quick = quick_search(s, dtype);
    std::vector<Row> quick_held = sustained_rows(s, quick, dtype, sustain);
    const double quick_s = steady_seconds() - t0;
    t0 = steady_seconds();
    std::vector<Row> full = s.runner->run(cases_of(grid, dtype, s.layout));
    std::vector<Row> full_held = sustained_rows(s, full, dtype, sustain);
    const double full_s = steady_seconds() - t0;
    const Row* quick_best = best_row(quick_held.empty() ? quick : quick_held, dtype);
    const Row* full_best = best_row(full_held.empty() ? full : full_held, dtype);
    if (quick_best && full_best) {
      const double ratio = *quick_best->metric_value("tflops") / *full_best->metric_value("tflops");
      s.report.summary.emplace_back(
          "search check " + name,
          "quick " + format_number(*quick_best->metric_value("tflops"), 1) + " TFLOPS (" +
              std::to_string(quick.size()) + " shapes, " + format_number(quick_s, 1) + " s) vs exhaustive " +
              format_number(*full_best->metric_value("tflops"), 1) + " (" + std::to_string(full.size()) + " shapes, " +
              format_number(full_s, 1) + " s): " + format_number(100 * ratio, 1) + "% of the exhaustive best in " +
              format_number(100 * quick_s / full_s, 1) + "% of its time (target: at least 98%)");
    }
    std::optional<Row> quick_mamf = mamf_row(s, quick, quick_held, dtype, "mamf", "mamf " + name + " (quick)", sustain);
    std::optional<Row> full_mamf =
        mamf_row(s, full, full_held, dtype, "mamf_exhaustive", "mamf " + name + " (exhaustive)", sustain);
    for (auto* part : {&quick, &quick_held, &full, &full_held}) {
      for (Row row : *part) {
        // The same shape may be in both searches.
        row.param("search", part == &quick || part == &quick_held ? "quick" : "exhaustive");
        s.report.rows.push_back(std::move(row));
      }
    }
    for (auto* mamf : {&quick_mamf, &full_mamf})
      if (*mamf) s.report.rows.push_back(std::move(**mamf));
  }
  if (!f.no_roofline && !interrupted()) {
    auto roofline = s.runner->run_roofline();
    for (const auto& row : roofline) {
      const std::string kernel = row.param_value("kernel").value_or("?");
      const auto pct = row.metric_value("datasheet_pct");
      const auto value = row.metric_value(kernel == "copy" ? "hbm_GBps" : "tflops");
      if (row.status == "ok" && value)
        s.report.summary.emplace_back(kernel == "copy" ? "hbm ceiling" : "fp32 fma ceiling",
                                      format_number(*value, 1) + (kernel == "copy" ? " GB/s" : " TFLOPS") +
                                          (pct ? " (" + format_number(*pct, 1) + "% of the datasheet)" : std::string()));
    }
    append(s.report.rows, std::move(roofline));
  }
  return finish_session(s);
}

// --- sweep --------------------------------------------------------------------


int run_sweep(SweepFlags& f, const BenchmarkArgs& bench_args) {
  const auto ms = dim_axis("--m", f.m), ns = dim_axis("--n", f.n), ks = dim_axis("--k", f.k);
  const auto grid = checked_grid(f.m, f.n, f.k);
  Session s = start_session(f.measure, bench_args, grid);
  for (GemmDtype dtype : s.dtypes) {
    if (interrupted()) break;
    append(s.report.rows, s.runner->run(cases_of(grid, dtype, s.layout)));
  }

  const std::string swept = swept_dimension(s.report.rows);
  const auto losses = analyze_gemm_sweep(s.report.rows, swept);
  for (const auto& loss : losses) {
    Row& row = s.report.rows[loss.row];
    std::string advice = "loses " + format_number(100 * loss.loss, 1) + "%";
    if (loss.recovered_by) {
      const Row& to = s.report.rows[*loss.recovered_by];
      advice += "; " + swept + " " + to.param_value(swept).value_or("?") + " recovers: +" +
                format_number(100 * loss.measured_gain, 1) + "% measured";
    } else {
      advice += "; no larger size in this sweep recovers it";
    }
    row.note = row.note.empty() ? advice : advice + "; " + row.note;
    s.report.summary.emplace_back(row.param_value("dtype").value_or("") + " " + shape_text(size_of(row)), advice);
  }
  s.report.summary.emplace_back("quantization", std::to_string(losses.size()) + " of " +
                                                    std::to_string(s.report.rows.size()) +
                                                    " shapes lose more than 10% of the quantization-free level");

  // Tokens per micro-batch that fill the GPU: the harness saturation over
  // the one swept dimension of C that carries the tokens, M or N (PyTorch's
  // forward GEMM puts them in N; C is M x N, column-major).
  const bool only_m = ms.size() > 1 && ns.size() == 1, only_n = ns.size() > 1 && ms.size() == 1;
  if ((only_m || only_n) && ks.size() == 1)
    for (GemmDtype dtype : s.dtypes) {
      std::vector<ThroughputPoint> points;
      for (const auto& row : s.report.rows)
        if (is_ok_gemm_row(row) && row.param_value("dtype") == gemm_dtype_info(dtype).name) {
          const GemmSize size = size_of(row);
          points.push_back({static_cast<double>(only_m ? size.m : size.n), *row.metric_value("tflops")});
        }
      const Saturation sat = analyze_saturation(points);
      const std::string dim = only_m ? "M" : "N";
      const std::string fixed = only_m ? "N = " + std::to_string(ns.front()) : "M = " + std::to_string(ms.front());
      if (sat.fraction && sat.best)
        s.report.summary.emplace_back(
            std::string("saturation ") + gemm_dtype_info(dtype).name,
            dim + " = " + format_number(sat.fraction->size, 0) + " reaches 90% of this shape's best (" +
                format_number(sat.best->throughput, 1) + " TFLOPS at " + dim + " = " +
                format_number(sat.best->size, 0) + ") for " + fixed + ", K = " + std::to_string(ks.front()));
    }
  return finish_session(s);
}

// --- model --------------------------------------------------------------------


TransformerShape transformer_of(const ModelFlags& f) {
  TransformerShape shape;
  shape.hidden = parse_count_between("--hidden", f.hidden, 1, kMaxDim);
  shape.heads = parse_count_between("--heads", f.heads, 1, kMaxDim);
  shape.ffn = parse_count_between("--ffn", f.ffn, 1, kMaxDim);
  shape.vocab = parse_count_between("--vocab", f.vocab, 1, kMaxDim);
  shape.seq = parse_count_between("--seq", f.seq, 1, kMaxDim);
  shape.micro_batch = parse_count_between("--mbs", f.mbs, 1, kMaxDim);
  shape.tensor_parallel = parse_count_between("--tp", f.tp, 1, 4096);
  shape.layers = parse_count_between("--layers", f.layers, 1, 100000);
  shape.swiglu = f.swiglu;
  if (shape.tokens() > kMaxDim) throw UsageError("--seq x --mbs", std::to_string(shape.tokens()), "too many tokens");
  validate_transformer_shape(shape);
  return shape;
}

// Median seconds of each measured shape, from the runner's rows.
using ShapeTimes = std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, const Row*>;

// With --benchmark_repetitions a shape has several rows: a wrong one stands
// for it; else the one with the median time among those that ran ok; else
// the first.
ShapeTimes index_by_shape(const std::vector<Row>& rows) {
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::vector<const Row*>> by_shape;
  for (const auto& row : rows) {
    const GemmSize s = size_of(row);
    by_shape[{s.m, s.n, s.k}].push_back(&row);
  }
  ShapeTimes times;
  for (auto& [key, group] : by_shape) {
    // A wrong repetition speaks for the shape: it must reach the report and
    // the exit status, not hide behind the median of the others.
    const auto wrong = std::find_if(group.begin(), group.end(), [](const Row* r) { return r->status == "wrong"; });
    if (wrong != group.end()) {
      times[key] = *wrong;
      continue;
    }
    std::vector<const Row*> ok;
    for (const Row* row : group)
      if (is_ok_gemm_row(*row) && row->metric_value("time_us")) ok.push_back(row);
    if (ok.empty()) {
      times[key] = group.front();
      continue;
    }
    std::sort(ok.begin(), ok.end(),
              [](const Row* a, const Row* b) { return *a->metric_value("time_us") < *b->metric_value("time_us"); });
    times[key] = ok[(ok.size() - 1) / 2];
  }
  return times;
}

std::vector<GemmCase> unique_cases(const std::vector<StepGemm>& gemms, GemmDtype dtype, GemmLayout layout,
                                   const ShapeTimes& already) {
  std::vector<GemmSize> sizes;
  for (const auto& g : gemms)
    if (!already.count({g.m, g.n, g.k})) sizes.push_back({g.m, g.n, g.k});
  return cases_of(unmeasured(sizes, {}), dtype, layout);
}

// Seconds of one step's GEMMs; nullopt when any of them did not run ok.
std::optional<double> step_seconds(const std::vector<StepGemm>& gemms, const ShapeTimes& times) {
  double total = 0;
  for (const auto& g : gemms) {
    const auto it = times.find({g.m, g.n, g.k});
    if (it == times.end() || !is_ok_gemm_row(*it->second)) return std::nullopt;
    total += *it->second->metric_value("time_us") * 1e-6 * static_cast<double>(g.count);
  }
  return total;
}

int run_model(ModelFlags& f, const BenchmarkArgs& bench_args) {
  const TransformerShape shape = transformer_of(f);
  const auto gemms = transformer_step_gemms(shape);
  std::vector<GemmSize> shapes;
  for (const auto& g : gemms) shapes.push_back({g.m, g.n, g.k});
  Session s = start_session(f.measure, bench_args, shapes);
  for (GemmDtype dtype : s.dtypes) {
    if (interrupted()) break;
    const std::string dtype_name = gemm_dtype_info(dtype).name;
    std::vector<Row> measured = s.runner->run(unique_cases(gemms, dtype, s.layout, {}));
    // Padded variants are measured into the same pool, so a shape two
    // variants share is timed once.
    std::vector<std::vector<Row>> pools;
    pools.push_back(std::move(measured));
    auto all_times = [&] {
      ShapeTimes times;
      for (const auto& pool : pools)
        for (const auto& [key, row] : index_by_shape(pool)) times[key] = row;
      return times;
    };
    ShapeTimes times = all_times();
    const auto base_seconds = step_seconds(gemms, times);

    for (const auto& g : gemms) {
      Row row;
      row.param("dtype", dtype_name).param("layout", gemm_layout_name(s.layout));
      row.param("layer", g.layer).param("pass", gemm_pass_name(g.pass));
      row.param("m", std::to_string(g.m)).param("n", std::to_string(g.n)).param("k", std::to_string(g.k));
      const auto found = times.find({g.m, g.n, g.k});
      if (found == times.end()) {
        row.status = "skipped";
        row.note = "not run (--benchmark_filter)";
        s.report.rows.push_back(std::move(row));
        continue;
      }
      const Row* measured_row = found->second;
      row.status = measured_row->status;
      row.note = measured_row->note;
      row.metric("calls_per_step", static_cast<double>(g.count));
      for (const char* metric : {"time_us", "tflops", "datasheet_pct", "predicted_efficiency", "wrong"})
        if (const auto v = measured_row->metric_value(metric)) row.metric(metric, *v);
      if (base_seconds && is_ok_gemm_row(*measured_row))
        row.metric("step_share_pct",
                   100 * *measured_row->metric_value("time_us") * 1e-6 * static_cast<double>(g.count) / *base_seconds);
      s.report.rows.push_back(std::move(row));
    }
    if (!base_seconds)
      s.report.summary.emplace_back("step " + dtype_name, "not every GEMM ran ok; see the rows");
    else
      s.report.summary.emplace_back(
          "step " + dtype_name,
          format_number(*base_seconds * 1e3, 3) + " ms of GEMMs per step per rank (" + std::to_string(shape.layers) +
              " layers + logits), " + format_number(step_gemm_flop(gemms) / *base_seconds / 1e12, 1) + " TFLOPS");

    // Padding advice, measured: each candidate's changed GEMMs are timed and
    // the step recomputed. Only a gain above the timing noise is advised.
    // When the step itself cannot run (FP8 with an odd vocab), the advice is
    // the smallest padding that lets it run.
    for (PaddedDim dim : {PaddedDim::vocab, PaddedDim::ffn, PaddedDim::hidden}) {
      if (interrupted()) break;
      std::optional<double> best_gain;
      std::int64_t best_value = 0;
      std::optional<std::pair<std::int64_t, double>> first_that_runs;  // value, seconds
      const auto candidates = padding_candidates(shape, dim);
      if (candidates.empty()) {  // said, so a missing advice line is not a mystery
        s.report.summary.emplace_back(std::string("advice ") + dtype_name + " " + padded_dim_name(dim),
                                      "no padding to try for " + std::to_string(dim_value(shape, dim)) +
                                          ": for each of 64, 128 and 256 (times --tp; for hidden, keeping a whole "
                                          "head size) it is already a multiple, or the next is more than 25% larger");
        continue;
      }
      for (std::int64_t value : candidates) {
        const TransformerShape padded = with_dim(shape, dim, value);
        const auto padded_gemms = transformer_step_gemms(padded);
        pools.push_back(s.runner->run(unique_cases(padded_gemms, dtype, s.layout, times)));
        times = all_times();
        // The padded shapes are reported too: a wrong or failed one must not
        // vanish into the advice.
        for (Row row : pools.back()) {
          row.param("variant", std::string(padded_dim_name(dim)) + "=" + std::to_string(value));
          s.report.rows.push_back(std::move(row));
        }
        if (const auto padded_seconds = step_seconds(padded_gemms, times)) {
          if (!first_that_runs) first_that_runs = {value, *padded_seconds};  // candidates come sorted
          if (!base_seconds) continue;
          const double gain = *base_seconds / *padded_seconds - 1;
          if (!best_gain || gain > *best_gain) best_gain = gain, best_value = value;
        }
      }
      const std::string name = padded_dim_name(dim);
      if (!base_seconds && first_that_runs)
        s.report.summary.emplace_back("advice " + dtype_name + " " + name,
                                      "pad " + name + " " + std::to_string(dim_value(shape, dim)) + " -> " +
                                          std::to_string(first_that_runs->first) + ": then every GEMM of the step runs (" +
                                          format_number(first_that_runs->second * 1e3, 3) + " ms, measured)");
      else if (best_gain && *best_gain > 0.01)
        s.report.summary.emplace_back("advice " + dtype_name + " " + name,
                                      "pad " + name + " " + std::to_string(dim_value(shape, dim)) + " -> " +
                                          std::to_string(best_value) + ": step GEMM time -" +
                                          format_number(100 * (1 - 1 / (1 + *best_gain)), 1) + "% (measured)");
      else if (best_gain)
        s.report.summary.emplace_back("advice " + dtype_name + " " + name,
                                      "keep " + std::to_string(dim_value(shape, dim)) +
                                          ": no padding tried gains more than 1% (best " +
                                          std::to_string(best_value) + ": " + format_number(100 * *best_gain, 1) +
                                          "%)");
    }
  }
  return finish_session(s);
}

#else  // !REDLINE_HAVE_GEMM_GPU

[[noreturn]] void cannot_measure() {
  throw CannotRun("this gemm_bench was built without CUDA, cuBLASLt or Google Benchmark; only predict runs");
}

#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GEMM throughput and its tile and wave quantization.", "gemm_bench"};
  app.require_subcommand(1);
  BenchmarkArgs args;
  try {
    args = split_benchmark_args(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "gemm_bench: " << e.what() << "\n";
    return kExitUsage;
  }
  install_interrupt_handlers();

  PredictFlags pf;
  CLI::App* predict = app.add_subcommand(
      "predict",
      "Tile and wave quantization model alone, for any GPU (no GPU needed): tiles, waves, tile, wave and "
      "predicted efficiency per shape; shapes losing more than 10% get the nearest larger size that recovers.");
  predict->add_option("--m", pf.m, "Rows of C: N, or a sweep 1,2,4 / A:B (step 1) / A:B:STEP / A:B:xF")->required()->type_name("AXIS");
  predict->add_option("--n", pf.n, "Columns of C (same forms)")->required()->type_name("AXIS");
  predict->add_option("--k", pf.k, "Reduction dimension (same forms)")->required()->type_name("AXIS");
  predict->add_option("--tile", pf.tile, "C tile one CTA computes, ROWSxCOLS (e.g. 128x256)")->required()->type_name("RxC");
  predict->add_option("--sms", pf.sms, "SM count (overrides --gpu's)")->type_name("S");
  predict->add_option("--gpu", pf.gpu, "Take the SM count from the table: A100, H100, H200, B200")->type_name("NAME");
  predict->add_option("--ctas-per-sm", pf.ctas_per_sm, "CTAs resident per SM (default 1)")->type_name("C");
  predict->add_option("--split-k", pf.split_k, "Split-K factor: tiles x this many CTAs (default 1)")->type_name("S");
  predict->add_option("--pad-dim", pf.pad_dim, "Dimension padding advice grows: m or n (default: the swept one, else n)")
      ->type_name("m|n");
  add_output_flags(*predict, pf.output);

  PeakFlags peak_flags;
  CLI::App* peak = app.add_subcommand(
      "peak",
      "Maximum achievable matmul TFLOPS per dtype (best shape, % of the datasheet, clocks), plus the HBM copy and "
      "FP32 FMA ceilings. The quick search (default) aims at shapes the quantization model says lose nothing.");
  add_measure_flags(*peak, peak_flags.measure, "bf16");
  peak->add_option("--search", peak_flags.search,
                   "quick (default), exhaustive (every --m x --n x --k), or check (both, and how close quick came)")
      ->type_name("quick|exhaustive|check");
  peak->add_option("--m", peak_flags.m, "Exhaustive/check search range of M (default 2048:16384:2048)")->type_name("AXIS");
  peak->add_option("--n", peak_flags.n, "Exhaustive search range of N")->type_name("AXIS");
  peak->add_option("--k", peak_flags.k, "Exhaustive search range of K")->type_name("AXIS");
  peak->add_option("--sustain", peak_flags.sustain,
                   "Time the search's best 3 shapes again over S seconds of back-to-back GEMMs, no noise stop; "
                   "the MAMF is the best of these (default 1; 0: the search's best short sample)")
      ->type_name("S");
  peak->add_flag("--no-roofline", peak_flags.no_roofline, "Skip the HBM copy and FP32 FMA ceilings");
  peak->add_option("--datasheet-gbps", peak_flags.measure.datasheet_gbps,
                   "Override the datasheet HBM GB/s the copy ceiling's percentage uses (the FMA one: "
                   "--datasheet-tflops with --dtype fp32)")
      ->type_name("X");

  SweepFlags sweep_flags;
  CLI::App* sweep = app.add_subcommand(
      "sweep",
      "TFLOPS over any dimension with the tile cuBLASLt chose, split-K, tiles, waves, tile/wave efficiency and the "
      "predicted TFLOPS; flags points losing more than 10% and the nearest larger size that recovers. Sweeping M or N "
      "alone gives the saturation: the tokens per micro-batch that fill the GPU (PyTorch's forward GEMM has them in "
      "N).");
  add_measure_flags(*sweep, sweep_flags.measure, "bf16");
  sweep->add_option("--m", sweep_flags.m, "Rows of C: N, or a sweep 1,2,4 / A:B (step 1) / A:B:STEP / A:B:xF")->required()->type_name("AXIS");
  sweep->add_option("--n", sweep_flags.n, "Columns of C (same forms)")->required()->type_name("AXIS");
  sweep->add_option("--k", sweep_flags.k, "Reduction dimension (same forms)")->required()->type_name("AXIS");

  ModelFlags model_flags;
  CLI::App* model = app.add_subcommand(
      "model",
      "Every GEMM of one transformer training step (QKV, attention out, FFN up/gate/down, logits; forward and both "
      "backward GEMMs) timed, the step's GEMM time and TFLOPS, and measured padding advice for vocab, ffn, hidden.");
  add_measure_flags(*model, model_flags.measure, "bf16");
  model->add_option("--hidden", model_flags.hidden, "Hidden size H")->required()->type_name("H");
  model->add_option("--heads", model_flags.heads, "Attention heads")->required()->type_name("A");
  model->add_option("--ffn", model_flags.ffn, "FFN width F")->required()->type_name("F");
  model->add_option("--vocab", model_flags.vocab, "Vocabulary size V")->required()->type_name("V");
  model->add_option("--seq", model_flags.seq, "Sequence length")->required()->type_name("S");
  model->add_option("--mbs", model_flags.mbs, "Micro-batch size")->required()->type_name("B");
  model->add_option("--tp", model_flags.tp, "Tensor-parallel size (default 1)")->type_name("T");
  model->add_option("--layers", model_flags.layers, "Layers per step (default 1)")->type_name("L");
  model->add_flag("--swiglu", model_flags.swiglu, "SwiGLU FFN: adds the gate projection");

  return run_tool(app, static_cast<int>(args.ours.size()), args.ours.data(), [&] {
#if defined(REDLINE_HAVE_GEMM_GPU)
    int google_argc = static_cast<int>(args.google.size());
    benchmark::Initialize(&google_argc, args.google.data());
    if (google_argc > 1) throw UsageError(std::string("Google Benchmark did not accept ") + args.google[1]);
#endif
    if (predict->parsed()) return run_predict(pf);
#if defined(REDLINE_HAVE_GEMM_GPU)
    if (peak->parsed()) return run_peak(peak_flags, args);
    if (sweep->parsed()) return run_sweep(sweep_flags, args);
    if (model->parsed()) return run_model(model_flags, args);
#else
    if (peak->parsed() || sweep->parsed() || model->parsed()) cannot_measure();
#endif
    throw UsageError("give a subcommand: predict, peak, sweep or model");
  });
}
