// TrainGemms: each linear-layer product as a row-major StridedMatmul.
#include "kernels/train/train_gemms.cuh"

namespace redline {

TrainGemms::TrainGemms(std::size_t workspace_bytes) : workspace_(workspace_bytes) {}

const LtMatmul& TrainGemms::plan(const StridedMatmul& p) {
  const auto key = std::make_tuple(p.m, p.n, p.k, p.transpose_a, p.transpose_b, static_cast<int>(p.output), p.beta);
  auto found = plans_.find(key);
  if (found == plans_.end()) found = plans_.emplace(key, LtMatmul(p, workspace())).first;
  return found->second;
}

void TrainGemms::enqueue(const LtMatmul& plan, const void* a, const void* b, const void* c, void* d,
                         cudaStream_t stream) {
  plan.enqueue(a, b, c, d, stream);
  if (recorder_ != nullptr) recorder_->push_back([&plan, a, b, c, d, stream] { plan.enqueue(a, b, c, d, stream); });
}

namespace {
StridedMatmul problem(std::int64_t m, std::int64_t n, std::int64_t k, bool transpose_a, bool transpose_b,
                      MatmulElement output, float beta) {
  StridedMatmul p;
  p.m = m, p.n = n, p.k = k, p.transpose_a = transpose_a, p.transpose_b = transpose_b;
  p.inputs = MatmulElement::bf16, p.output = output, p.beta = beta;
  return p;
}
}  // namespace

void TrainGemms::linear(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, std::int64_t rows,
                        std::int64_t in, std::int64_t out, const __nv_bfloat16* residual, cudaStream_t stream) {
  // y [rows, out] = x [rows, in] * (W [out, in])^T
  const float beta = residual != nullptr ? 1.0f : 0.0f;
  enqueue(plan(problem(rows, out, in, false, true, MatmulElement::bf16, beta)), x, w,
          residual != nullptr ? static_cast<const void*>(residual) : y, y, stream);
}

void TrainGemms::data_grad(const __nv_bfloat16* d_y, const __nv_bfloat16* w, __nv_bfloat16* d_x, std::int64_t rows,
                           std::int64_t in, std::int64_t out, bool accumulate, cudaStream_t stream) {
  // d_x [rows, in] = d_y [rows, out] * W [out, in]
  enqueue(plan(problem(rows, in, out, false, false, MatmulElement::bf16, accumulate ? 1.0f : 0.0f)), d_y, w, d_x, d_x,
          stream);
}

void TrainGemms::weight_grad(const __nv_bfloat16* d_y, const __nv_bfloat16* x, float* d_w, std::int64_t rows,
                             std::int64_t in, std::int64_t out, cudaStream_t stream) {
  // d_W [out, in] += (d_y [rows, out])^T * x [rows, in]
  enqueue(plan(problem(out, in, rows, true, false, MatmulElement::fp32, 1.0f)), d_y, x, d_w, d_w, stream);
}

}  // namespace redline
