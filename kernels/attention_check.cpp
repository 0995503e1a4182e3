// Attention checks: device tensors read back as doubles, the CPU reference,
// and per-tensor relative Frobenius errors.
//
// Tolerances (relative Frobenius error, against fp64 on the same stored
// inputs). The error is set by what each path rounds to the io dtype: the
// output (rms relative rounding of one element: bf16 2^-9/sqrt(3) ~ 1e-3,
// fp16 2^-12/sqrt(3) ~ 1.4e-4, e4m3 2^-4/sqrt(3) ~ 3.6e-2) and, in the
// unfused path and the backward, the intermediates stored in it (S and P,
// dP and dS): a few such roundings chained, each amplified by at most the
// softmax's gain, give a few times the one-element figure. So
//   bf16 2e-2, fp16 5e-3: 4-10x the expected error (a few e-3, a few e-4);
//   fp8  1e-1: P, O, dP and the gradients are each e4m3 (~4% apiece).
// Wrong results are far above them: a lost causal mask, a wrong GQA
// grouping or a missing head sum gives errors of 0.1 to 1.
#include "kernels/attention_check.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>

#include "kernels/attention_cudnn.cuh"
#include "kernels/cuda_check.cuh"
#include "kernels/random_fill.cuh"

namespace redline {

double attention_tolerance(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::bf16: return 2e-2;
    case GemmDtype::fp16: return 5e-3;
    case GemmDtype::fp8_e4m3: return 1e-1;
    default: (void)attention_element_bytes(dtype);  // throws, naming the dtype
  }
  return 0;
}

namespace {

template <typename T>
void convert(const std::vector<std::byte>& bytes, std::vector<double>& out, double scale) {
  const auto* values = reinterpret_cast<const T*>(bytes.data());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = random_detail::to_double(values[i]) / scale;
}

// The scale FP8 stores `tensor` with (`scales`, or the defaults when null;
// attention_cudnn.cuh); 1 otherwise.
double stored_scale(GemmDtype dtype, const std::string& tensor, const AttentionFp8Scales* scales) {
  if (dtype != GemmDtype::fp8_e4m3) return 1.0;
  const AttentionFp8Scales& f = scales != nullptr ? *scales : attention_fp8_scales();
  if (tensor == "q") return f.q;
  if (tensor == "k") return f.k;
  if (tensor == "v") return f.v;
  if (tensor == "d_o") return f.d_o;
  if (tensor == "o") return f.o;
  if (tensor == "dq") return f.dq;
  if (tensor == "dk") return f.dk;
  if (tensor == "dv") return f.dv;
  return 1.0;  // lse is fp32
}

std::vector<double> lse_to_host(const float* lse, std::int64_t count) {
  std::vector<float> values(static_cast<std::size_t>(count));
  REDLINE_CUDA_CHECK(cudaMemcpy(values.data(), lse, values.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return {values.begin(), values.end()};
}

// Where each checked tensor lives and how many elements it has.
struct CheckedTensor {
  const char* name;
  const void* result;
  const void* reference;
  std::int64_t count;
  bool fp32;  // lse
};

std::vector<CheckedTensor> checked_tensors(const AttentionShape& shape, const AttentionTensors& r,
                                           const AttentionTensors& ref, bool backward) {
  const std::int64_t nq = query_elements(shape), nkv = kv_elements(shape), rows = shape.batch * shape.heads * shape.seq;
  std::vector<CheckedTensor> tensors = {{"o", r.o, ref.o, nq, false}, {"lse", r.lse, ref.lse, rows, true}};
  if (backward) {
    tensors.push_back({"dq", r.dq, ref.dq, nq, false});
    tensors.push_back({"dk", r.dk, ref.dk, nkv, false});
    tensors.push_back({"dv", r.dv, ref.dv, nkv, false});
  }
  return tensors;
}

}  // namespace

std::vector<double> attention_tensor_to_host(const void* data, std::int64_t count, GemmDtype dtype, double scale) {
  const std::size_t element = attention_element_bytes(dtype);
  std::vector<std::byte> bytes(static_cast<std::size_t>(count) * element);
  if (!bytes.empty()) REDLINE_CUDA_CHECK(cudaMemcpy(bytes.data(), data, bytes.size(), cudaMemcpyDeviceToHost));
  std::vector<double> out(static_cast<std::size_t>(count));
  switch (dtype) {
    case GemmDtype::bf16: convert<__nv_bfloat16>(bytes, out, scale); break;
    case GemmDtype::fp16: convert<__half>(bytes, out, scale); break;
    default: convert<__nv_fp8_e4m3>(bytes, out, scale); break;
  }
  return out;
}

bool AttentionCheck::passed() const {
  return std::all_of(tensors.begin(), tensors.end(),
                     [this](const AttentionTensorError& t) { return within_tolerance(t.error, tolerance); });
}

std::string AttentionCheck::failure() const {
  std::string text;
  for (const AttentionTensorError& t : tensors) {
    if (within_tolerance(t.error, tolerance)) continue;
    if (!text.empty()) text += "; ";
    text += t.tensor + ": relative error " + std::to_string(t.error.relative) + " (tolerance " +
            std::to_string(tolerance) + "), " + std::to_string(t.error.nonfinite) + " non-finite";
  }
  return text;
}

CaseCheck AttentionCheck::case_check() const {
  std::map<std::string, double> figures;
  double nonfinite = 0;
  for (const AttentionTensorError& t : tensors) {
    figures["rel_error_" + t.tensor] = t.error.relative;
    nonfinite += static_cast<double>(t.error.nonfinite);
  }
  if (passed()) {
    CaseCheck check = CaseCheck::pass();
    check.figures = std::move(figures);
    return check;
  }
  return CaseCheck::fail(failure(), nonfinite, std::move(figures));
}

AttentionCheck check_attention_against_reference(const AttentionShape& shape, GemmDtype dtype,
                                                 const AttentionTensors& result, bool backward,
                                                 const AttentionFp8Scales* scales) {
  validate(shape);
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
  const std::int64_t nq = query_elements(shape), nkv = kv_elements(shape);
  const auto read = [dtype, scales](const void* data, std::int64_t count, const char* name) {
    return attention_tensor_to_host(data, count, dtype, stored_scale(dtype, name, scales));
  };
  const std::vector<double> q = read(result.q, nq, "q"), k = read(result.k, nkv, "k"), v = read(result.v, nkv, "v");
  const AttentionForward forward = attention_forward_reference(shape, q, k, v);
  AttentionCheck check;
  check.tolerance = attention_tolerance(dtype);
  check.tensors.push_back({"o", relative_error(read(result.o, nq, "o"), forward.o)});
  check.tensors.push_back({"lse", relative_error(lse_to_host(result.lse, shape.batch * shape.heads * shape.seq),
                                                 forward.lse)});
  if (!backward) return check;
  const AttentionGradients grads = attention_backward_reference(shape, q, k, v, read(result.d_o, nq, "d_o"));
  check.tensors.push_back({"dq", relative_error(read(result.dq, nq, "dq"), grads.dq)});
  check.tensors.push_back({"dk", relative_error(read(result.dk, nkv, "dk"), grads.dk)});
  check.tensors.push_back({"dv", relative_error(read(result.dv, nkv, "dv"), grads.dv)});
  return check;
}

namespace {

// ||x - ref|| / ||ref|| over a whole tensor, read `chunk` elements at a time.
TensorError streamed_error(const CheckedTensor& t, GemmDtype dtype, GemmDtype reference_dtype,
                           const AttentionFp8Scales* scales, const AttentionFp8Scales* reference_scales) {
  constexpr std::int64_t chunk = std::int64_t{1} << 24;
  double diff2 = 0, ref2 = 0;
  TensorError error;
  for (std::int64_t at = 0; at < t.count; at += chunk) {
    const std::int64_t n = std::min(chunk, t.count - at);
    const auto part = [&](const void* base, GemmDtype type, const AttentionFp8Scales* type_scales) {
      if (t.fp32) return lse_to_host(static_cast<const float*>(base) + at, n);
      const auto* bytes = static_cast<const std::byte*>(base) + at * static_cast<std::int64_t>(attention_element_bytes(type));
      return attention_tensor_to_host(bytes, n, type, stored_scale(type, t.name, type_scales));
    };
    const std::vector<double> x = part(t.result, dtype, scales),
                              r = part(t.reference, reference_dtype, reference_scales);
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!std::isfinite(x[i])) ++error.nonfinite;
      diff2 += (x[i] - r[i]) * (x[i] - r[i]);
      ref2 += r[i] * r[i];
    }
  }
  error.relative = error.nonfinite > 0 ? std::numeric_limits<double>::infinity()
                   : ref2 > 0          ? std::sqrt(diff2 / ref2)
                   : diff2 == 0        ? 0.0
                                       : std::numeric_limits<double>::infinity();
  return error;
}

}  // namespace

AttentionCheck check_attention_against_gpu(const AttentionShape& shape, GemmDtype dtype,
                                           const AttentionTensors& result, GemmDtype reference_dtype,
                                           const AttentionTensors& reference, bool backward,
                                           const AttentionFp8Scales* scales,
                                           const AttentionFp8Scales* reference_scales) {
  validate(shape);
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
  AttentionCheck check;
  check.tolerance = 2 * std::max(attention_tolerance(dtype), attention_tolerance(reference_dtype));
  for (const CheckedTensor& t : checked_tensors(shape, result, reference, backward))
    check.tensors.push_back({t.name, streamed_error(t, dtype, reference_dtype, scales, reference_scales)});
  return check;
}

}  // namespace redline

namespace redline {
namespace {

// One KV group's slice of the device tensors, read back as doubles.
GroupTensors read_group(const AttentionShape& shape, GemmDtype dtype, const AttentionTensors& t, bool backward,
                        const AttentionFp8Scales* scales, std::int64_t batch, std::int64_t kv_head) {
  const std::int64_t g = shape.heads / shape.kv_heads, s = shape.seq, d = shape.head_dim;
  const std::int64_t first_query_head = batch * shape.heads + kv_head * g;  // the group's heads are consecutive
  const std::int64_t query_at = first_query_head * s * d, kv_at = (batch * shape.kv_heads + kv_head) * s * d;
  const auto element = static_cast<std::int64_t>(attention_element_bytes(dtype));
  const auto read = [&](const void* base, std::int64_t at, std::int64_t count, const char* name) {
    return attention_tensor_to_host(static_cast<const std::byte*>(base) + at * element, count, dtype,
                                    stored_scale(dtype, name, scales));
  };
  GroupTensors group;
  group.q = read(t.q, query_at, g * s * d, "q");
  group.k = read(t.k, kv_at, s * d, "k");
  group.v = read(t.v, kv_at, s * d, "v");
  group.o = read(t.o, query_at, g * s * d, "o");
  group.lse = lse_to_host(t.lse + first_query_head * s, g * s);
  if (backward) {
    group.d_o = read(t.d_o, query_at, g * s * d, "d_o");
    group.dq = read(t.dq, query_at, g * s * d, "dq");
    group.dk = read(t.dk, kv_at, s * d, "dk");
    group.dv = read(t.dv, kv_at, s * d, "dv");
  }
  return group;
}

// The errors of several groups' samples as one check: the worst per tensor.
void keep_worst(AttentionCheck& check, const char* tensor, const TensorError& error) {
  for (AttentionTensorError& t : check.tensors)
    if (t.tensor == tensor) {
      if (error.nonfinite > 0 || error.relative > t.error.relative) t.error = error;
      return;
    }
  check.tensors.push_back({tensor, error});
}

}  // namespace

AttentionCheck check_attention_on_groups(const AttentionShape& shape, GemmDtype dtype, const AttentionTensors& result,
                                         bool backward, const AttentionFp8Scales* scales, std::int64_t query_samples,
                                         std::int64_t key_samples) {
  validate(shape);
  REDLINE_CUDA_CHECK(cudaDeviceSynchronize());
  AttentionCheck check;
  check.tolerance = attention_tolerance(dtype);
  const std::pair<std::int64_t, std::int64_t> groups[] = {{0, 0}, {shape.batch - 1, shape.kv_heads - 1}};
  for (const auto& [batch, kv_head] : groups) {
    const GroupTensors group = read_group(shape, dtype, result, backward, scales, batch, kv_head);
    const GroupCheck c = check_group(shape, group, backward, query_samples, key_samples);
    keep_worst(check, "o", c.o);
    keep_worst(check, "lse", c.lse);
    if (!backward) continue;
    keep_worst(check, "dq", c.dq);
    keep_worst(check, "dk", c.dk);
    keep_worst(check, "dv", c.dv);
  }
  return check;
}

AttentionCheck check_attention(const AttentionShape& shape, GemmDtype dtype, const AttentionTensors& result,
                               bool backward, const AttentionFp8Scales* scales, double reference_flop) {
  if (attention_forward_flop(shape) <= reference_flop)
    return check_attention_against_reference(shape, dtype, result, backward, scales);
  return check_attention_on_groups(shape, dtype, result, backward, scales);
}

}  // namespace redline
