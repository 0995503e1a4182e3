// The GEMMs of one transformer training step, for the GEMM model: every
// Linear layer's forward GEMM and its two backward GEMMs, with the shapes a
// tensor-parallel rank actually runs. Also the padded sizes worth trying for
// vocab, FFN width and hidden size. Pure arithmetic, tested without a GPU.
//
// A Linear layer y = x W^T with x [tokens, in] and W [out, in] (row-major,
// as PyTorch stores them) runs three GEMMs. cuBLAS is column-major, so a
// row-major [rows, cols] result is a column-major [cols, rows] C, and the
// M (rows of C) x N that cuBLAS sees, and whose tiles and waves the model
// counts, is the transpose of the math's, as PyTorch calls it:
//   forward        y[tokens, out]  = x  W^T   M = out, N = tokens, K = in
//   backward data  dx[tokens, in]  = dy W     M = in,  N = tokens, K = out
//   backward weight dW[out, in]    = dy^T x   M = in,  N = out,    K = tokens
// Per layer (Megatron-style tensor parallelism over T ranks, hidden H,
// heads A of size d = H/A, K KV heads (grouped-query attention; K = A is
// MHA), FFN width F; a rank holds 1/T of the column-parallel outputs and of
// the row-parallel inputs):
//   qkv       in H,    out (H + 2Kd)/T   (column-parallel; 3H/T for MHA)
//   attn_out  in H/T,  out H      (row-parallel)
//   ffn_up    in H,    out F/T    (column-parallel)
//   ffn_gate  in H,    out F/T    (SwiGLU only)
//   ffn_down  in F/T,  out H      (row-parallel)
// and once per step, after the last layer:
//   logits    in H,    out V/T    (vocab-parallel output layer)
// Attention's own batched GEMMs (QK^T and PV, per head) are attention's
// business (a later tool); they are not here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redline {

struct TransformerShape {
  std::int64_t hidden = 0, heads = 0, ffn = 0, vocab = 0, seq = 0, micro_batch = 0;
  std::int64_t kv_heads = 0;  // grouped-query attention's KV heads; 0: as many as heads (MHA)
  std::int64_t tensor_parallel = 1;
  std::int64_t layers = 1;
  bool swiglu = false;

  std::int64_t tokens() const { return seq * micro_batch; }
  std::int64_t kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
};

enum class GemmPass { forward, backward_data, backward_weight };
const char* gemm_pass_name(GemmPass pass);  // "fwd", "bwd_data", "bwd_weight"

struct StepGemm {
  std::string layer;   // "qkv", "attn_out", "ffn_up", "ffn_gate", "ffn_down", "logits"
  GemmPass pass = GemmPass::forward;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t count = 1;  // times per step: layers, or 1 for logits
};

// Throws UsageError naming the flag: sizes below 1, hidden not divisible by
// heads, heads not divisible by the KV heads, hidden/ffn/vocab/heads/KV heads
// not divisible by the tensor-parallel size (each rank holds whole KV heads).
void validate_transformer_shape(const TransformerShape& shape);

// Every GEMM of one step in the order above, three passes per layer.
std::vector<StepGemm> transformer_step_gemms(const TransformerShape& shape);

// FLOP of one step's GEMMs on one rank: sum of 2*m*n*k*count.
double step_gemm_flop(const std::vector<StepGemm>& gemms);

enum class PaddedDim { vocab, ffn, hidden };
const char* padded_dim_name(PaddedDim dim);

// The padded sizes worth measuring for `dim`: the next multiples of 64, 128
// and 256 (times the tensor-parallel size, so each rank's share is that
// multiple too; for hidden also a multiple of heads, so the head size stays
// whole), plus `model_hint` when the quantization model proposes one, each
// at most 25% above the current size and larger than it. Sorted, unique.
std::vector<std::int64_t> padding_candidates(const TransformerShape& shape, PaddedDim dim,
                                             std::optional<std::int64_t> model_hint = std::nullopt);

// `shape` with `dim` set to `value`.
TransformerShape with_dim(TransformerShape shape, PaddedDim dim, std::int64_t value);
std::int64_t dim_value(const TransformerShape& shape, PaddedDim dim);

// Which layers' GEMMs change when `dim` changes (logits for vocab; ffn_* for
// ffn; every layer for hidden).
bool layer_depends_on(const std::string& layer, PaddedDim dim);

}  // namespace redline
