#include "bench/gemm/flags.hpp"

#include "harness/core/axis.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"
#include "harness/gpu/gemm_dtype.hpp"
#include "harness/report/tool_main.hpp"

namespace redline::gemm {

std::vector<std::int64_t> dim_axis(const char* flag, const std::string& text) {
  return parse_count_axis_between(flag, text, 1, kMaxDim);
}

std::vector<GemmSize> checked_grid(const std::string& m, const std::string& n, const std::string& k) {
  const auto ms = dim_axis("--m", m), ns = dim_axis("--n", n), ks = dim_axis("--k", k);
  const double count = static_cast<double>(ms.size()) * static_cast<double>(ns.size()) * static_cast<double>(ks.size());
  if (count > static_cast<double>(kMaxPoints))
    throw UsageError("--m/--n/--k give " + format_number(count, 0) + " shapes; at most " + std::to_string(kMaxPoints));
  return grid_shapes(ms, ns, ks);
}

void add_measure_flags(CLI::App& app, MeasureFlags& f, const char* default_dtype) {
  f.dtype = default_dtype;
  app.add_option("--dtype", f.dtype, "Comma list or all: " + known_gemm_dtypes())->type_name("LIST");
  app.add_option("--layout", f.layout,
                 "tn (default: A transposed, as FP8 needs), nn, or nt (B transposed: a weight gradient's GEMM)")
      ->type_name("tn|nn|nt");
  app.add_option("--algos", f.algos,
                 "cuBLASLt heuristic candidates to time, keeping the fastest (default 1: the heuristic's choice, "
                 "as torch.matmul runs)")
      ->type_name("N");
  app.add_option("--device", f.device, "CUDA device index (default 0)")->type_name("I");
  add_policy_flags(app, f.policy, "shape");
  app.add_option("--first-warmup", f.first_warmup,
                 "Warm-up seconds of the first shape, so clocks are up (default 1, at least --warmup)")
      ->type_name("S");
  app.add_option("--gpu", f.gpu, "Datasheet row to compare with (A100, H100, H200, B200; default: the GPU's name)")
      ->type_name("NAME");
  app.add_option("--datasheet-tflops", f.datasheet_tflops,
                 "Override the datasheet dense TFLOPS the percentages use (one dtype at a time)")
      ->type_name("X");
  app.add_flag("--progress", f.progress, "Progress lines on stderr even when it is not a terminal");
  add_output_flags(app, f.output);
}

}  // namespace redline::gemm
