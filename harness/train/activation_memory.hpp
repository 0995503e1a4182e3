// What the training step keeps in device memory, per recompute mode: the
// tensors its forward pass saves for the backward (this implementation's own
// list, which the CUDA stack allocates from, so the model and the code cannot
// drift apart), the weights, gradients, fp32 master weights and AdamW state,
// the backward's working buffers and the workspaces, and from them the
// predicted peak and the largest micro-batch that fits. Pure C++.
//
// Per layer, with T = mbs x seq tokens, h hidden, k = kv_heads x head dim,
// f ffn, a query heads; bf16 is 2 bytes, fp32 4:
//   tensor   shape      none  selective  full   what reads it in the backward
//   x        T x h      yes   yes        yes    RMSNorm 1 (the layer's input)
//   rstd1    T fp32     yes   yes        -      RMSNorm 1
//   n1       T x h      yes   -          -      the QKV weight gradient
//   q        T x h      yes   yes        -      attention (after rotary)
//   k, v     T x k      yes   yes        -      attention (k after rotary)
//   o        T x h      yes   yes        -      attention; the output weight gradient
//   lse      a x T fp32 yes   yes        -      attention's backward
//   h1       T x h      yes   yes        -      RMSNorm 2 (x + attention output)
//   rstd2    T fp32     yes   yes        -      RMSNorm 2
//   n2       T x h      yes   -          -      gate and up weight gradients
//   gate, up T x f each yes   yes        -      SwiGLU's backward
//   act      T x f      yes   -          -      the down weight gradient
// selective drops the norm outputs and the SwiGLU product (cheap to redo from
// x, h1, gate and up); attention's internals are never kept (the fused kernel
// recomputes them). full keeps each layer's input and reruns the layer's
// forward inside its backward.
// Outside the layers: the final RMSNorm's input (the last layer's output) and
// output, its rstd, the logits (T x vocab bf16, overwritten in place by their
// gradient), the per-token losses (fp32), tokens and targets (int32).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/train/model_config.hpp"

namespace redline {

enum class Recompute { none, selective, full };
const char* recompute_name(Recompute mode);  // "none", "selective", "full"
std::optional<Recompute> parse_recompute(const std::string& text);

struct SavedTensor {
  std::string name;            // "gate"
  std::int64_t elements = 0;   // for one layer (or once, outside the layers)
  int element_bytes = 2;       // bf16 2, fp32 4, int32 4
  std::int64_t bytes() const { return elements * element_bytes; }
};

// What one layer's forward keeps for its backward, in the table's order.
std::vector<SavedTensor> saved_per_layer(const ModelConfig& config, std::int64_t mbs, std::int64_t seq, Recompute mode);
// What the stack keeps outside the layers (the same in every mode).
std::vector<SavedTensor> saved_outside_layers(const ModelConfig& config, std::int64_t mbs, std::int64_t seq);

// The backward's buffers, live while one layer's backward runs: the residual
// gradient (two T x h, ping-ponged), the gradients of n, the attention
// output, q, k, v, and of gate and up and act; in selective mode the
// recomputed n1, n2 and act of the one layer, in full mode that layer's
// whole forward (every tensor `none` keeps but x).
std::vector<SavedTensor> backward_working_set(const ModelConfig& config, std::int64_t mbs, std::int64_t seq,
                                              Recompute mode);

// What the unfused attention path adds to the working set (the cuDNN path
// reads the token-major q, k, v in place and adds nothing): BHSD copies of
// q, k, v, o, d_o, d_q, d_k, d_v ("bhsd_q", ...), and its score matrices
// S/P and dP/dS ("scores", "grad_scores", b x a x s^2 bf16 each). In the
// backward it reruns the layer's attention forward to get P back.
std::vector<SavedTensor> unfused_attention_buffers(const ModelConfig& config, std::int64_t mbs, std::int64_t seq);

struct StateBytes {
  std::int64_t weights = 0;    // bf16 compute copy: 2 N
  std::int64_t grads = 0;      // fp32, accumulated over micro-batches: 4 N
  std::int64_t master = 0;     // fp32 master weights: 4 N
  std::int64_t optimizer = 0;  // AdamW m and v, fp32: 8 N
  std::int64_t total() const { return weights + grads + master + optimizer; }
  // What one AdamW step moves (kernels/train/adamw.cu): master, m and v read
  // and written, the gradient read, the bf16 weights written: 30 N.
  std::int64_t adamw_traffic() const { return 2 * (master + optimizer) + grads + weights; }
};
StateBytes state_bytes(const ModelConfig& config);

// cuBLASLt's one shared workspace (32 MiB, as PyTorch gives it on Hopper)
// and cuDNN's attention backward's: its fp32 dQ accumulator (T x h x 4) and
// per-row softmax sums (a x T x 4), what the frontend's composite SDPA
// backward asks for, and with GQA the engine's dK and dV at the query heads'
// count (2 x T x h x 2), measured.
std::int64_t workspace_bytes(const ModelConfig& config, std::int64_t mbs, std::int64_t seq);
// The cuBLASLt part of it: the one workspace every GEMM of the step shares.
// The RMSNorm weight gradients borrow it between GEMMs (same stream) for
// their chunks' column sums (norm_grad_chunks), so they allocate nothing.
std::int64_t cublaslt_workspace_bytes();

// How an RMSNorm weight gradient (a sum over `rows` per column) splits its
// rows: `chunks` chunks of rows_per_chunk rows (a multiple of 8, the
// kernel's row lanes; the last chunk may be shorter), each chunk's fp32
// column sums kept in scratch until a second pass adds them in chunk order.
// Many chunks fill the GPU where one block per column tile could not, and
// the fixed order needs no atomics. At most 64 chunks (at width 4096, 16
// tiles of 256 columns x 64 chunks: 1024 blocks of 256 threads, several per
// SM of an H100), and no more than `scratch_bytes` of column sums hold. Throws
// std::invalid_argument when not even one chunk's sums fit.
struct NormGradChunks {
  std::int64_t rows_per_chunk = 0, chunks = 0;
  std::int64_t partial_bytes(std::int64_t width) const { return chunks * width * 4; }
};
NormGradChunks norm_grad_chunks(std::int64_t rows, std::int64_t width, std::int64_t scratch_bytes);

struct MemoryPrediction {
  Recompute mode = Recompute::none;
  std::int64_t parameters = 0;
  StateBytes state;
  std::int64_t activation_bytes_per_layer = 0;
  std::int64_t activation_bytes = 0;  // every layer, plus what is kept outside the layers
  std::int64_t working_bytes = 0;     // backward_working_set
  std::int64_t workspace = 0;
  // Korthikanti et al. (2022), per layer: s b h (34 + 5 a s / h) bytes (no
  // recompute, 16-bit activations with dropout and 4h GELU MLP, scores kept).
  double korthikanti_per_layer = 0;
  // The peak: state + activations + the backward's working set + workspaces,
  // all live at the start of the backward pass.
  std::int64_t peak() const { return state.total() + activation_bytes + working_bytes + workspace; }
};

// The model counts bytes in int64, and a micro-batch whose tensors would
// overflow it is not counted: no tensor may pass kMostTensorBytes (64 TiB,
// far past any GPU's memory). Then even 4096 layers (--layers' limit) of 14
// kept tensors each, with the state of the largest shapes the flags allow,
// sum well inside int64.
inline constexpr std::int64_t kMostTensorBytes = std::int64_t{1} << 46;

// The largest tensor the model lists for a micro-batch (or counts among the
// workspaces), in double so that its size cannot overflow: the logits
// (T x vocab), gate (T x ffn, as up and act), cuDNN's fp32 dQ accumulator
// (T x h), or the unfused path's scores (b x a x s^2).
struct TensorSize {
  std::string name;
  double bytes = 0;
};
TensorSize largest_tensor(const ModelConfig& config, std::int64_t mbs, std::int64_t seq,
                          AttentionChoice attention = AttentionChoice::cudnn);
// largest_tensor is at most kMostTensorBytes.
bool memory_countable(const ModelConfig& config, std::int64_t mbs, std::int64_t seq,
                      AttentionChoice attention = AttentionChoice::cudnn);

// With the unfused attention path, its buffers count with the workspaces.
// Throws std::invalid_argument when the micro-batch is not memory_countable.
MemoryPrediction predict_memory(const ModelConfig& config, std::int64_t mbs, std::int64_t seq, Recompute mode,
                                AttentionChoice attention = AttentionChoice::cudnn);

// The largest micro-batch whose predicted peak fits `memory_bytes`; 0 when
// not even 1 does. A micro-batch the model cannot count does not fit (its
// largest tensor alone passes kMostTensorBytes), which is exact for memory up
// to kMostTensorBytes and bounds the search.
std::int64_t max_fitting_mbs(const ModelConfig& config, std::int64_t seq, Recompute mode, std::int64_t memory_bytes,
                             AttentionChoice attention = AttentionChoice::cudnn);

}  // namespace redline
