// What the attention sweep concludes from its measured rows, pure C++ so
// it is tested without a GPU:
//   block rows   the attention block per layout, batch and attention path:
//                the QKV and output projections plus attention, their
//                median times summed (they run one after another), forward
//                (direction fwd) and forward + backward (direction train);
//   the recommendation   layouts ranked by their block's measured time
//                (train where measured, else fwd) at the largest batch, each
//                on its faster path, with the model's reasons for each loss;
//   saturation   per layout, path and direction over a --batch axis: the
//                smallest batch x heads reaching the plateau and 90% of the
//                best TFLOPS (harness/measure/saturation.hpp's rule).
// Rows carry the parameters hidden, heads, kv_heads, tp, head_dim, batch,
// seq, causal, dtype, path (unfused, cudnn, projections; block_unfused,
// block_cudnn for the block rows) and direction (fwd, bwd; train), and the
// metrics time_us and tflops.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "harness/attention/attention_model.hpp"
#include "harness/report/report.hpp"

namespace redline {

// A row of one of the attention paths (unfused, cudnn): not the projections
// or an unfused GEMM timed alone (unfused_gemm), which are parts, and not a
// block row.
bool is_attention_path_row(const Row& row);

// The block rows the parts allow (a part missing or not ok: no block row).
std::vector<Row> attention_block_rows(const std::vector<Row>& rows);

// Ranks the layouts' block rows at the largest batch; sets `rank` on the
// block rows of the best path at that batch and returns the summary lines
// ("recommend", then "rank 2", ...). `predictions` explain the losses: one
// per layout, matched by heads, kv_heads and tp. A layout whose cuDNN rows
// were skipped or failed says so. Empty without block rows.
std::vector<std::pair<std::string, std::string>> attention_recommendation(
    std::vector<Row>& rows, const std::vector<LayoutPrediction>& predictions);

// One summary line per layout, path and direction swept over two or more
// batches: "saturation a_q=32 a_kv=8 d=128 cudnn fwd".
std::vector<std::pair<std::string, std::string>> attention_saturation(const std::vector<Row>& rows);

}  // namespace redline
