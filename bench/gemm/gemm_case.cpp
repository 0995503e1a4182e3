#include "bench/gemm/gemm_case.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <stdexcept>

#include "harness/core/interrupt.hpp"
#include "harness/core/units.hpp"
#include "harness/gpu/gemm_model.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/gemm_lt.cuh"
#include "kernels/kernel_trace.cuh"

namespace redline::gemm {
namespace {

// The kernel that does the GEMM among those a cuBLASLt call launched: the
// one whose name states a tile, else the one with the most CTAs (split-K
// adds a small reduction kernel).
const LaunchedKernel* gemm_kernel(const KernelTrace& trace) {
  for (const auto& k : trace.kernels)
    if (tile_from_kernel_name(k.name)) return &k;
  const LaunchedKernel* best = nullptr;
  for (const auto& k : trace.kernels)
    if (!best || k.ctas() > best->ctas()) best = &k;
  return best;
}

// With several heuristic candidates, selects the fastest by a short timing.
// A candidate cuBLASLt offers but cannot run is passed over, not the whole
// shape's failure; a CUDA error (sticky) still ends the shape. Returns the
// note naming the candidates passed over ("" for none).
std::string select_fastest_candidate(LtGemm& gemm, CaseSetUp& setup) {
  std::optional<int> best;
  double best_time = 0;
  std::string failures;
  for (int i = 0; i < gemm.candidate_count() && !interrupted(); ++i) {
    gemm.select_candidate(i);
    try {
      const Measurement t = setup.time_variant([&](int set) { gemm.enqueue(set); });
      if (t.samples.empty()) continue;  // interrupted
      if (!best || t.summary.median < best_time) best = i, best_time = t.summary.median;
    } catch (const CublasError& e) {
      failures += std::string(failures.empty() ? "" : "; ") + "candidate " + std::to_string(i) + ": " + e.what();
    }
  }
  if (!best && !failures.empty()) throw std::runtime_error("no heuristic candidate ran: " + failures);
  gemm.select_candidate(best.value_or(0));
  return failures.empty() ? "" : "passed over " + failures;
}

GemmOptions lt_options(const GemmCaseSpec& spec, const GemmCaseOptions& options) {
  GemmOptions lt;
  lt.dtype = spec.dtype;
  lt.layout = spec.layout;
  lt.batch = spec.batch;
  lt.heuristic_candidates = options.heuristic_candidates;
  return lt;
}

class PreparedGemm final : public PreparedCase {
 public:
  PreparedGemm(const GemmCaseSpec& spec, const GemmCaseOptions& options, CaseSetUp& setup)
      : spec_(spec),
        options_(options),
        device_(setup.device()),
        gemm_(spec.size.m, spec.size.n, spec.size.k, lt_options(spec, options), setup.stream()) {
    if (gemm_.candidate_count() > 1) passed_over_ = select_fastest_candidate(gemm_, setup);
    // The kernels the selected algorithm launches, named: the tile when
    // cuBLASLt does not say, and the CTAs really launched.
    trace_ = trace_kernels([&] {
      gemm_.enqueue(0);
      REDLINE_CUDA_CHECK(cudaStreamSynchronize(setup.stream()));
    });
  }

  CaseWork work() const override {
    CaseWork work;
    work.flop = gemm_.flop_count();
    if (options_.peaks)
      work.datasheet = DatasheetCeiling{DatasheetCeiling::Rate::tflops,
                                        options_.peaks->tflops(gemm_dtype_info(spec_.dtype).peak)};
    return work;
  }

  CaseCheck verify(cudaStream_t) override {
    check_ = gemm_.verify(0);
    return check_.case_check();
  }

  // LtGemm runs on the stream it was made with: the runner's one stream.
  void enqueue(cudaStream_t, int iteration) override { gemm_.enqueue(iteration); }

  void describe(CaseRow& row) const override {
    row.counter("rel_error", check_.relative_error);
    row.note(passed_over_);
    describe_algorithm(row);
    const GemmSize& s = spec_.size;
    if (const auto align = gemm_alignment_note(spec_.dtype, spec_.layout, s.m, s.n, s.k)) row.note(*align);
    if (gemm_.rotation_bytes() < 2 * device_.l2_bytes)
      row.note("operands partly L2-resident: " + std::to_string(gemm_.buffer_sets()) + " buffer sets span " +
               format_size(gemm_.rotation_bytes()) + ", under twice the L2");
  }

 private:
  // The tile (cuBLASLt's tile id when it gives one, else the kernel's name),
  // split-K and the quantization model's tiles, waves and efficiencies.
  void describe_algorithm(CaseRow& row) const {
    const GemmAlgorithm& algo = gemm_.algorithm();
    const LaunchedKernel* kernel = gemm_kernel(trace_);
    std::optional<TileShape> tile = algo.tile;
    if (!tile && kernel) tile = tile_from_kernel_name(kernel->name);
    row.counter("split_k", algo.split_k);
    if (algo.heuristic_waves > 0) row.counter("heuristic_waves", algo.heuristic_waves);
    if (kernel) row.counter("grid_ctas", static_cast<double>(kernel->ctas()));
    if (!tile) {
      row.note("tile unknown (" + (trace_.unavailable ? *trace_.unavailable : std::string("kernel name states none")) +
               ")");
      return;
    }
    row.counter("tile_m", static_cast<double>(tile->rows));
    row.counter("tile_n", static_cast<double>(tile->cols));
    const GemmSize& s = spec_.size;
    const GemmPrediction p = predict_gemm(
        GemmProblem{s.m, s.n, s.k, *tile, device_.sm_count, 1, std::max(1, algo.split_k), spec_.batch});
    row.counter("tiles", static_cast<double>(p.tiles));
    row.counter("waves", p.waves);
    row.counter("tile_efficiency", p.tile_efficiency);
    row.counter("wave_efficiency", p.wave_efficiency);
    row.counter("predicted_efficiency", p.predicted_efficiency);
  }

  GemmCaseSpec spec_;
  GemmCaseOptions options_;
  DeviceProperties device_;
  LtGemm gemm_;
  std::string passed_over_;
  KernelTrace trace_;
  GemmCheck check_;
};

class GemmCase final : public GpuCase {
 public:
  GemmCase(GemmCaseSpec spec, GemmCaseOptions options) : spec_(std::move(spec)), options_(std::move(options)) {}

  CaseKey key() const override { return gemm_case_key(spec_); }
  std::unique_ptr<PreparedCase> set_up(CaseSetUp& setup) const override {
    return std::make_unique<PreparedGemm>(spec_, options_, setup);
  }

 private:
  GemmCaseSpec spec_;
  GemmCaseOptions options_;
};

}  // namespace

CaseKey gemm_case_key(const GemmCaseSpec& spec) {
  CaseKey key{"gemm",
              {{"dtype", gemm_dtype_info(spec.dtype).name},
               {"layout", gemm_layout_name(spec.layout)},
               {"m", std::to_string(spec.size.m)},
               {"n", std::to_string(spec.size.n)},
               {"k", std::to_string(spec.size.k)}}};
  // Only a batched case names its batch, so unbatched keys (and the
  // baselines that hold them) stay as they were.
  if (spec.batch > 1) key.params.emplace_back("batch", std::to_string(spec.batch));
  key.params.insert(key.params.end(), spec.extra_params.begin(), spec.extra_params.end());
  return key;
}

std::unique_ptr<GpuCase> make_gemm_case(const GemmCaseSpec& spec, const GemmCaseOptions& options) {
  return std::make_unique<GemmCase>(spec, options);
}

std::vector<GemmCaseSpec> gemm_specs(const std::vector<GemmSize>& sizes, GemmDtype dtype, GemmLayout layout,
                                     std::int64_t batch) {
  std::vector<GemmCaseSpec> specs;
  for (const auto& s : sizes) specs.push_back({s, dtype, layout, batch, {}});
  return specs;
}

}  // namespace redline::gemm
