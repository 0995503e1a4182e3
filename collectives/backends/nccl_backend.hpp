// The NCCL backend: collectives on GPU memory, one process per GPU or one
// process driving several GPUs (nccl-tests' -g). No CUDA or NCCL header here,
// so bench code includes it under #ifdef REDLINE_HAVE_NCCL_BACKEND only.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "collectives/backends/backend.hpp"
#include "collectives/bootstrap/bootstrap.hpp"

namespace redline {

// This process has no GPU it can use (no driver, no device, no kernel image
// for it): "cannot run here", exit 77.
class NoUsableGpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The ranks launched on a host need more GPUs than it shows (too many ranks
// per node, -g too large, CUDA_VISIBLE_DEVICES too narrow): a launch mistake.
// The message names the host, the local rank, the local size, -g and the
// visible GPU count.
class GpuMappingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Local rank L of its host drives GPUs L*g .. L*g+g-1 (nccl-tests' mapping);
// global rank of local GPU i is bootstrap.rank()*g + i, of size()*g ranks.
// Collective over all ranks: the device checks are exchanged before NCCL
// starts, so when any rank cannot start every rank throws (its own reason, or
// "rank R cannot start: <R's reason>") instead of hanging in init.
// Leaves the first local GPU current.
//
// blocking_each_op (-z): after each operation (after group_end when grouped)
// wait for it to complete and then barrier all ranks through `bootstrap`, as
// nccl-tests' -z does. Skipped while capturing; a graph replay is waited for
// instead. Backends from split() wait but do not barrier.
//
// `bootstrap` must outlive the backend. Throws NoUsableGpuError,
// GpuMappingError, or std::runtime_error (CudaError/NcclError) naming the call.
std::unique_ptr<Backend> make_nccl_backend(Bootstrap& bootstrap, int gpus_per_process, bool blocking_each_op);

// Version of the NCCL library loaded at run time, "2.28.9" (may differ from
// the header the binary was built with); "unknown" if it cannot be queried.
// Needs no GPU.
std::string nccl_version_string();

}  // namespace redline
