#include "bench/attention/layout_flags.hpp"

#include <algorithm>
#include <string>

#include "harness/core/axis.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline::attention {
namespace {

// Hidden sizes of real models reach 16K-25K; 2^20 is far above any and keeps
// every FLOP count exact in a double.
constexpr std::int64_t kMaxHidden = std::int64_t{1} << 20;
constexpr std::int64_t kMaxSeq = std::int64_t{1} << 22;
constexpr std::int64_t kMaxBatch = std::int64_t{1} << 20;
// Far more layouts than a hidden size has sensible head splits (auto gives a
// few dozen at most), yet few enough that plan's table stays readable and
// quick: 4096 x 4096 pairs took gigabytes and minutes.
constexpr std::size_t kMaxLayouts = 10000;

std::vector<std::int64_t> head_counts(const std::string& text, std::int64_t hidden) {
  if (text == "auto") {
    auto counts = auto_head_counts(hidden);
    if (counts.empty())
      throw UsageError("--hidden", std::to_string(hidden), "no head count gives a head dim between 32 and 256");
    return counts;
  }
  if (text.find("auto") != std::string::npos)
    throw UsageError("--heads", text, "auto stands alone: it is every head count, so it takes no others beside it");
  return parse_count_axis_between("--heads", text, 1, hidden);
}

GpuPeaks model_gpu_peaks(const std::string& name) {
  const auto peaks = lookup_gpu_peaks(name);
  if (!peaks) throw UsageError("--gpu", name, "unknown GPU (known: " + known_gpu_models() + ")");
  return *peaks;
}

}  // namespace

GemmDtype parse_attention_dtype(const std::string& text) {
  if (text == "fp8") return GemmDtype::fp8_e4m3;
  const auto dtype = parse_gemm_dtype(text);
  if (!dtype || !is_attention_dtype(*dtype)) throw UsageError("--dtype", text, "must be bf16, fp16 or fp8");
  return *dtype;
}

const char* attention_dtype_name(GemmDtype dtype) {
  return dtype == GemmDtype::fp8_e4m3 ? "fp8" : gemm_dtype_info(dtype).name;
}

void add_layout_flags(CLI::App& sub, LayoutFlags& f, bool batch_axis) {
  sub.add_option("--hidden", f.hidden, "Hidden size h (the model width heads x head dim splits)")
      ->required()
      ->type_name("H");
  sub.add_option("--heads", f.heads,
                 "Query head counts: a list, an axis, or auto (every count whose d = h / a is whole and between 32 "
                 "and 256; default)")
      ->type_name("LIST|auto");
  sub.add_option("--kv-heads", f.kv_heads, "KV head counts for GQA/MQA (default: as many as query heads)")
      ->type_name("LIST");
  sub.add_option("--tp", f.tp, "Tensor-parallel size: each GPU runs a / T heads (default 1)")->type_name("T");
  sub.add_option("--seq", f.seq, "Sequence length (default 4096)")->type_name("S");
  sub.add_option("--batch", f.batch, batch_axis ? "Batch sizes: a list or an axis, 1,2,4 or 1:16:x2 (default 1)"
                                                : "Batch size (default 1)")
      ->type_name(batch_axis ? "AXIS" : "B");
  sub.add_option("--dtype", f.dtype, "bf16 (default), fp16 or fp8 (e4m3 inputs)")->type_name("DTYPE");
  sub.add_flag("--causal", f.causal, "Causal mask (FLOPs count the s(s+1)/2 unmasked scores)");
  sub.add_option("--gpu", f.gpu,
                 batch_axis ? "GPU whose SMs, architecture and clock the model uses (default: the device measured)"
                            : "GPU whose SMs, architecture and clock the model uses: A100, H100, H200, B200 (default H100)")
      ->type_name("NAME");
}

LayoutGrid layout_grid(const LayoutFlags& f, const std::string& default_gpu, bool batch_axis) {
  LayoutGrid grid;
  grid.hidden = parse_count_between("--hidden", f.hidden, 1, kMaxHidden);
  const std::int64_t tp = parse_count_between("--tp", f.tp, 1, 4096);
  const auto heads = head_counts(f.heads, grid.hidden);
  // Without --kv-heads every layout is MHA (as many KV heads as query heads).
  const auto kv = f.kv_heads.empty() ? std::vector<std::int64_t>{}
                                     : parse_count_axis_between("--kv-heads", f.kv_heads, 1, kMaxHidden);
  const auto layouts = heads.size() * std::max<std::size_t>(kv.size(), 1);
  if (layouts > kMaxLayouts)
    throw UsageError("--heads", f.heads,
                     "with --kv-heads '" + f.kv_heads + "' makes " + std::to_string(layouts) +
                         " layouts; the limit is " + std::to_string(kMaxLayouts) + " (narrow either list)");
  for (std::int64_t a_q : heads) {
    // A KV count that does not divide a_q is a layout plan lists as infeasible, with the reason.
    if (kv.empty()) grid.layouts.push_back({grid.hidden, a_q, a_q, tp});
    for (std::int64_t a_kv : kv) grid.layouts.push_back({grid.hidden, a_q, a_kv, tp});
  }
  grid.seq = parse_count_between("--seq", f.seq, 1, kMaxSeq);
  grid.batches = batch_axis ? parse_count_axis_between("--batch", f.batch, 1, kMaxBatch)
                            : std::vector<std::int64_t>{parse_count_between("--batch", f.batch, 1, kMaxBatch)};
  grid.dtype = parse_attention_dtype(f.dtype);
  grid.causal = f.causal;
  grid.gpu = model_gpu_peaks(f.gpu.empty() ? default_gpu : f.gpu);
  return grid;
}

}  // namespace redline::attention
