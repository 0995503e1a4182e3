#include "bench/attention/attention_cases.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/attention/attention_model.hpp"
#include "kernels/attention_check.cuh"
#include "kernels/attention_cudnn.cuh"
#include "kernels/attention_tensors.cuh"
#include "kernels/attention_unfused.cuh"
#include "kernels/gemm_lt.cuh"
#include "kernels/gemm_reference.cuh"

namespace redline::attention {
namespace {

constexpr std::uint64_t kSeed = 1;

CaseKey case_key(const AttentionCaseSpec& spec, const char* path) {
  const AttentionShape& s = spec.shape;
  CaseKey key{"attention", {}};
  auto add = [&](const char* name, std::string value) { key.params.emplace_back(name, std::move(value)); };
  add("hidden", std::to_string(spec.layout.hidden));
  add("heads", std::to_string(spec.layout.heads));
  add("kv_heads", std::to_string(spec.layout.kv_heads));
  add("tp", std::to_string(spec.layout.tp));
  add("head_dim", std::to_string(s.head_dim));
  add("batch", std::to_string(s.batch));
  add("seq", std::to_string(s.seq));
  add("causal", s.causal ? "yes" : "no");
  add("dtype", attention_dtype_name(spec.dtype));
  add("path", path);
  add("direction", direction_name(spec.direction));
  return key;
}

std::optional<DatasheetCeiling> ceiling(const AttentionCaseSpec& spec) {
  if (!spec.peaks) return std::nullopt;
  return DatasheetCeiling{DatasheetCeiling::Rate::tflops, spec.peaks->tflops(gemm_dtype_info(spec.dtype).peak)};
}

double mebibytes(std::size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// One attention path on one problem, its tensors and its plan.
class PreparedAttention : public PreparedCase {
 public:
  PreparedAttention(const AttentionCaseSpec& spec, AttentionPath path, cudaStream_t stream)
      : spec_(spec), path_(path), backward_(spec.direction == AttentionDirection::backward),
        buffers_(spec.shape, spec.dtype, backward_, kSeed, stream) {
    if (path == AttentionPath::unfused) {
      unfused_ = std::make_unique<UnfusedAttention>(spec.shape, spec.dtype, backward_, stream);
    } else {
      cudnn_ = std::make_unique<CudnnAttention>(spec.shape, spec.dtype, backward_, stream);
      if (!cudnn_->supported()) throw CaseSkipped(cudnn_->unsupported_reason());
      // FP8: the scales fitted to this shape's tensors before anything is
      // checked or timed (the defaults underflow dS, and with it dQ and dK,
      // at long sequences); verify reads the tensors back with them.
      if (spec.dtype == GemmDtype::fp8_e4m3) {
        cudnn_->calibrate_fp8(buffers_.tensors());
        fp8_scales_ = cudnn_->fp8_scales();
      }
    }
  }

  CaseWork work() const override {
    CaseWork w;
    w.flop = backward_ ? attention_backward_flop(spec_.shape) : attention_forward_flop(spec_.shape);
    w.datasheet = ceiling(spec_);
    return w;
  }

  // The backward reads the forward's O and LSE (and the unfused path its P):
  // the forward runs first, once, and only the backward is then timed.
  CaseCheck verify(cudaStream_t) override {
    forward();
    if (backward_) run_backward();
    return check_attention(spec_.shape, spec_.dtype, buffers_.tensors(), backward_,
                           fp8_scales_ ? &*fp8_scales_ : nullptr)
        .case_check();
  }

  void enqueue(cudaStream_t, int) override { backward_ ? run_backward() : forward(); }

  void describe(CaseRow& row) const override {
    const std::size_t workspace = unfused_ ? unfused_->workspace_bytes() : cudnn_->workspace_bytes();
    row.counter("memory_MiB", mebibytes(buffers_.bytes() + workspace));
    if (spec_.shape.causal) row.note("causal: FLOPs count the s(s+1)/2 unmasked scores");
    if (unfused_) {
      // gemms() lists all six planned; this direction runs its own (2 forward, 4 backward).
      const auto& gemms = unfused_->gemms();
      const auto runs =
          std::count_if(gemms.begin(), gemms.end(), [this](const UnfusedGemm& g) { return g.backward == backward_; });
      row.note("unfused: " + std::to_string(runs) + " cuBLASLt GEMMs, s^2 scores in memory");
    }
    if (unfused_ && backward_)
      row.note("backward FLOPs = 2.5 x forward, the five GEMMs of a fused backward (the gradients of the two "
               "forward GEMMs, 4, and the recompute of S, 1); the unfused path keeps P and runs four, and is "
               "credited by the same convention so the paths compare on one count (so its backward TFLOPS read "
               "25% above its own GEMM work)");
    if (cudnn_) row.note("cuDNN " + CudnnAttention::version());
    if (fp8_scales_) {
      const AttentionFp8Scales& f = *fp8_scales_;
      const auto g = [](float x) {
        char text[32];
        std::snprintf(text, sizeof text, "%g", static_cast<double>(x));
        return std::string(text);
      };
      row.note("fp8 scales (calibrated): P " + g(f.s) + ", O " + g(f.o) + ", backward P " + g(f.s_backward) +
               ", dS " + g(f.dp) + ", dQ " + g(f.dq) + ", dK " + g(f.dk) + ", dV " + g(f.dv));
    }
  }

 private:
  void forward() const { unfused_ ? unfused_->forward(buffers_.tensors()) : cudnn_->forward(buffers_.tensors()); }
  void run_backward() const {
    unfused_ ? unfused_->backward(buffers_.tensors()) : cudnn_->backward(buffers_.tensors());
  }

  AttentionCaseSpec spec_;
  AttentionPath path_;
  bool backward_;
  AttentionBuffers buffers_;
  std::unique_ptr<UnfusedAttention> unfused_;
  std::unique_ptr<CudnnAttention> cudnn_;
  std::optional<AttentionFp8Scales> fp8_scales_;  // FP8 cuDNN: the calibrated scales
};

class AttentionCase : public GpuCase {
 public:
  AttentionCase(AttentionCaseSpec spec, AttentionPath path) : spec_(std::move(spec)), path_(path) {}
  CaseKey key() const override { return case_key(spec_, path_name(path_)); }
  std::unique_ptr<PreparedCase> set_up(CaseSetUp& setup) const override {
    return std::make_unique<PreparedAttention>(spec_, path_, setup.stream());
  }

 private:
  AttentionCaseSpec spec_;
  AttentionPath path_;
};

// The projections run in the attention's dtype (FP8: e4m3 inputs, bf16 out,
// as cuBLASLt's FP8 GEMM writes), in the layout FP8 needs.
GemmOptions projection_options(GemmDtype dtype) {
  GemmOptions options;
  options.dtype = dtype;
  options.layout = GemmLayout::tn;
  options.seed = kSeed;
  return options;
}

class PreparedProjections : public PreparedCase {
 public:
  PreparedProjections(const AttentionCaseSpec& spec, cudaStream_t stream) : spec_(spec) {
    for (const AttentionGemm& g : projection_gemms(spec.layout, spec.shape.batch, spec.shape.seq, spec.direction)) {
      gemms_.push_back(std::make_unique<LtGemm>(g.m, g.n, g.k, projection_options(spec.dtype), stream));
      flop_ += g.flop();
    }
  }

  CaseWork work() const override {
    CaseWork w;
    w.flop = flop_;
    w.datasheet = ceiling(spec_);
    return w;
  }

  CaseCheck verify(cudaStream_t) override {
    for (const auto& gemm : gemms_) {
      const GemmCheck c = gemm->verify();
      if (!c.passed()) return c.case_check("a projection GEMM");
    }
    return CaseCheck::pass();
  }

  void enqueue(cudaStream_t, int iteration) override {
    for (const auto& gemm : gemms_) gemm->enqueue(iteration);
  }

  void describe(CaseRow& row) const override {
    std::size_t bytes = 0;
    for (const auto& gemm : gemms_) bytes += gemm->bytes_per_set();
    row.counter("memory_MiB", mebibytes(bytes));
    row.note(std::to_string(gemms_.size()) + " cuBLASLt GEMMs (" +
             (spec_.direction == AttentionDirection::forward ? "QKV and output" : "their input and weight gradients") +
             "), rotating buffer sets");
  }

 private:
  AttentionCaseSpec spec_;
  std::vector<std::unique_ptr<LtGemm>> gemms_;
  double flop_ = 0;
};

class ProjectionCase : public GpuCase {
 public:
  explicit ProjectionCase(AttentionCaseSpec spec) : spec_(std::move(spec)) {}
  CaseKey key() const override { return case_key(spec_, "projections"); }
  std::unique_ptr<PreparedCase> set_up(CaseSetUp& setup) const override {
    return std::make_unique<PreparedProjections>(spec_, setup.stream());
  }

 private:
  AttentionCaseSpec spec_;
};

// The unfused path's GEMM as gemm_bench names it; every GEMM the path plans
// has one (tests/gpu/attention_host_test).
ColumnMajorGemm equivalent_of(const UnfusedGemm& gemm) {
  const auto equivalent = column_major_equivalent(gemm.problem);
  if (!equivalent) throw std::logic_error("unfused GEMM " + gemm.name + " has no gemm_bench equivalent");
  return *equivalent;
}

// One GEMM of the unfused path alone, on the path's own tensors: the
// forward (and backward) run once first, so it reads what it reads inside
// the path (P, dS: real values, never zeros) and its plan is the path's.
class PreparedUnfusedGemm : public PreparedCase {
 public:
  PreparedUnfusedGemm(const AttentionCaseSpec& spec, std::size_t index, cudaStream_t stream)
      : spec_(spec), index_(index), stream_(stream),
        buffers_(spec.shape, spec.dtype, spec.direction == AttentionDirection::backward, kSeed, stream),
        unfused_(spec.shape, spec.dtype, spec.direction == AttentionDirection::backward, stream),
        gemm_(unfused_.gemms().at(index)), equivalent_(equivalent_of(gemm_)) {
    unfused_.forward(buffers_.tensors());
    if (spec.direction == AttentionDirection::backward) unfused_.backward(buffers_.tensors());
  }

  CaseWork work() const override {
    CaseWork w;
    w.flop = matmul_flop_count(gemm_.problem);
    w.datasheet = ceiling(spec_);
    return w;
  }

  // The GEMM against the GEMM reference, every batch: column-major, so the
  // reference's A is the path's B (lt_matmul.cuh), and alpha its scale.
  CaseCheck verify(cudaStream_t) override {
    const UnfusedAttention::Operands operands = unfused_.gemm_operands(index_, buffers_.tensors());
    unfused_.enqueue_gemm(index_, buffers_.tensors());
    const ColumnMajorGemm& e = equivalent_;
    check_ = gemm_check(spec_.dtype, compare_with_reference(spec_.dtype, e.layout, e.m, e.n, e.k, operands.b,
                                                            operands.a, operands.c, gemm_.problem.alpha, 1.0f,
                                                            stream_, e.strides()));
    return check_.case_check(gemm_.name);
  }

  void enqueue(cudaStream_t, int) override { unfused_.enqueue_gemm(index_, buffers_.tensors()); }

  void describe(CaseRow& row) const override {
    row.counter("rel_error", check_.relative_error);
    const GemmAlgorithm& algo = unfused_.gemm_plan(index_).algorithm();
    row.counter("split_k", algo.split_k);
    if (algo.tile) {
      row.counter("tile_m", static_cast<double>(algo.tile->rows));
      row.counter("tile_n", static_cast<double>(algo.tile->cols));
    }
    const ColumnMajorGemm& e = equivalent_;
    row.note(gemm_.name + " (" + redline::describe(gemm_.problem) + ") alone, on the path's tensors; as gemm_bench runs it: " +
             "sweep --dtype " + gemm_dtype_info(spec_.dtype).name + " --layout " + gemm_layout_name(e.layout) +
             " --m " + std::to_string(e.m) + " --n " + std::to_string(e.n) + " --k " + std::to_string(e.k) +
             " --batch " + std::to_string(e.batch));
  }

 private:
  AttentionCaseSpec spec_;
  std::size_t index_;
  cudaStream_t stream_;
  AttentionBuffers buffers_;
  UnfusedAttention unfused_;
  UnfusedGemm gemm_;
  ColumnMajorGemm equivalent_;
  GemmCheck check_;
};

class UnfusedGemmCase : public GpuCase {
 public:
  UnfusedGemmCase(AttentionCaseSpec spec, std::size_t index) : spec_(std::move(spec)), index_(index) {}

  // The layout's parameters, path unfused_gemm, then the GEMM and its
  // gemm_bench shape.
  CaseKey key() const override {
    CaseKey key = case_key(spec_, "unfused_gemm");
    const UnfusedGemm gemm = unfused_attention_gemms(spec_.shape, spec_.dtype).at(index_);
    const ColumnMajorGemm e = equivalent_of(gemm);
    key.params.emplace_back("gemm", gemm.name);
    key.params.emplace_back("gemm_layout", gemm_layout_name(e.layout));
    key.params.emplace_back("gemm_m", std::to_string(e.m));
    key.params.emplace_back("gemm_n", std::to_string(e.n));
    key.params.emplace_back("gemm_k", std::to_string(e.k));
    key.params.emplace_back("gemm_batch", std::to_string(e.batch));
    return key;
  }
  std::unique_ptr<PreparedCase> set_up(CaseSetUp& setup) const override {
    return std::make_unique<PreparedUnfusedGemm>(spec_, index_, setup.stream());
  }

 private:
  AttentionCaseSpec spec_;
  std::size_t index_;
};

}  // namespace

std::unique_ptr<GpuCase> make_attention_case(const AttentionCaseSpec& spec, AttentionPath path) {
  return std::make_unique<AttentionCase>(spec, path);
}

std::unique_ptr<GpuCase> make_projection_case(const AttentionCaseSpec& spec) {
  return std::make_unique<ProjectionCase>(spec);
}

std::unique_ptr<GpuCase> make_unfused_gemm_case(const AttentionCaseSpec& spec, std::size_t index) {
  return std::make_unique<UnfusedGemmCase>(spec, index);
}

}  // namespace redline::attention
