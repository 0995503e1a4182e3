// checkpoint_bench's GPU side behind an interface with no CUDA types: the
// GPU->host copy rows, the async save from a GPU, restore's last step onto
// the GPU, and what a GPU failure's status is. Where there is no usable GPU
// (or the build has no CUDA) the rows say so, as skipped.
#pragma once

#include <exception>
#include <optional>
#include <string>

#include "harness/checkpoint/checkpoint_stages.hpp"

namespace redline {

// Why the GPU stages cannot run here; std::nullopt when they can.
std::optional<std::string> gpu_unavailable();

// oom (the GPU or pinned memory ran out) or wrong (the GEMM load computed a
// wrong result, or a copy's destination differs from its source: a finding
// about the GPU, like a failed verification) for a GPU failure;
// std::nullopt for any other.
std::optional<RowStatus> gpu_failure_status(const std::exception& e);

// The copy rows (gpu.d2h pageable and pinned on 1/2/4 streams, the
// cudaMemcpy ceiling, gpu.h2d), or skipped rows saying `no_gpu`; a variant
// whose copy failed its check is a "wrong" row. Returns the best pinned
// GPU->host copy of the whole state (of those checked right), in seconds:
// the part of a synchronous save's stall spent before storage sees a byte.
std::optional<double> add_gpu_copy_rows(const CheckpointConfig& cfg, const std::optional<std::string>& no_gpu,
                                        Report& report);

// The async save with the state on the GPU: the snapshot into pinned host
// memory is the stall, and a GEMM load runs during the persist. Only where
// gpu_unavailable() is std::nullopt.
AsyncResults run_gpu_async_save(const CheckpointConfig& cfg, Report& report);

// The restore.h2d row: the restored state (pageable memory, where the read
// lands) copied to the GPU and checked. Returns its seconds, or std::nullopt
// with a skipped row saying `no_gpu`.
std::optional<double> add_restore_to_gpu_row(const AlignedBuffer& restored, const CheckpointConfig& cfg,
                                             const std::optional<std::string>& no_gpu, Report& report);

}  // namespace redline
