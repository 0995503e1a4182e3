// gemm_bench's flags, as CLI11 collects them (text), per subcommand, and the
// checks every subcommand shares: GEMM dimensions and shape grids.
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/gemm/gemm_peak_search.hpp"
#include "harness/measure/policy_flags.hpp"
#include "harness/report/output.hpp"

namespace redline::gemm {

struct PredictFlags {
  std::string m, n, k, tile, sms, gpu, ctas_per_sm = "1", split_k = "1", pad_dim;
  OutputOptions output;
};

// Flags every measuring subcommand shares.
struct MeasureFlags {
  std::string dtype = "bf16", layout = "tn", algos = "1", device = "0";
  PolicyFlags policy;
  std::string first_warmup = "1";
  std::string gpu, datasheet_tflops;
  std::string datasheet_gbps;  // peak only: the HBM ceiling's datasheet
  bool progress = false;
  OutputOptions output;
};

struct PeakFlags {
  MeasureFlags measure;
  std::string search = "quick", m = "2048:16384:2048", n = "2048:16384:2048", k = "2048:16384:2048";
  std::string sustain = "1";
  bool no_roofline = false;
  std::string grid_flag;  // the first of --m, --n, --k given on the command line (the quick search takes none)
};

struct SweepFlags {
  MeasureFlags measure;
  std::string m, n, k;
  std::string batch = "1";  // strided-batched GEMMs per call
};

// The reference check's grid holds at most this many batches.
inline constexpr std::int64_t kMaxBatch = 65535;

struct ModelFlags {
  MeasureFlags measure;
  std::string hidden, heads, kv_heads, ffn, vocab, seq, mbs, tp = "1", layers = "1";
  bool swiglu = false;
};

// cuBLASLt takes 64-bit dimensions, but no single GEMM of a training step
// comes near 2^31 along one edge; the cap keeps tile counts far from overflow.
inline constexpr std::int64_t kMaxDim = (std::int64_t{1} << 31) - 1;
inline constexpr std::size_t kMaxPoints = 100000;

// One of --m, --n, --k: every size 1 to kMaxDim (UsageError otherwise).
std::vector<std::int64_t> dim_axis(const char* flag, const std::string& text);
// The --m x --n x --k grid, M outermost, refused (exit 2) above kMaxPoints
// shapes before any of it is built.
std::vector<GemmSize> checked_grid(const std::string& m, const std::string& n, const std::string& k);

// The flags of the measuring subcommands on `app`, with `default_dtype`.
void add_measure_flags(CLI::App& app, MeasureFlags& f, const char* default_dtype);

}  // namespace redline::gemm
