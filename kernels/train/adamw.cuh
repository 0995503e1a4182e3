// AdamW on fp32 master weights with fp32 moments, and the refresh of the
// bf16 compute copy in the same pass. Decoupled weight decay (Loshchilov
// and Hutter; PyTorch's torch.optim.AdamW) with bias correction.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace redline {

struct AdamWSettings {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;  // applied to 2-D weights only, never to norm weights
};

// One tensor's update at step `step` (1-based), element by element:
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   w -= lr (m / (1 - b1^step) / (sqrt(v / (1 - b2^step)) + eps) + decay w)
//   weights = bf16(w)
// with decay = settings.weight_decay when `decay`, else 0. master, grad, m
// and v must be 16-byte aligned and weights 8-byte (every TrainParameters
// tensor is, starting at a multiple of 128 elements): std::invalid_argument
// otherwise.
void adamw_update(float* master, const float* grad, float* m, float* v, __nv_bfloat16* weights, std::int64_t count,
                  const AdamWSettings& settings, std::int64_t step, bool decay, cudaStream_t stream);

// weights = bf16(master), round to nearest even.
void cast_to_bf16(const float* master, __nv_bfloat16* weights, std::int64_t count, cudaStream_t stream);

}  // namespace redline
