// The MPI side of redline behind a header that does not include mpi.h, so
// bench code can use it under #ifdef REDLINE_HAVE_MPI: the MPI bootstrap
// (mpirun, srun) and the host backend, which runs the collectives with MPI on
// host memory. That measures the network for CPU jobs and tests every code
// path of the tools without a GPU.
#pragma once

#include <climits>
#include <cstddef>
#include <memory>

#include "collectives/backends/backend.hpp"
#include "collectives/bootstrap/bootstrap.hpp"
#include "collectives/ops/data_type.hpp"

namespace redline {

// MPI_Init_thread asking for MPI_THREAD_MULTIPLE (the watchdog may call
// MPI_Abort while another thread is inside a collective); rank and size from
// MPI_COMM_WORLD, the local rank and size from the ranks sharing this node's
// memory. Throws std::runtime_error when a launcher started several ranks
// but MPI sees only this one: the ranks would otherwise each run alone.
// `argc` and `argv` are main's (MPI may consume its own arguments) or null.
// The bootstrap's destructor calls MPI_Finalize: destroy every host backend first.
std::unique_ptr<Bootstrap> make_mpi_bootstrap(int* argc, char*** argv);

// Whether MPI was initialized with MPI_THREAD_MULTIPLE, i.e. whether
// Backend::abort (MPI_Abort) may be called from a watchdog thread while
// another thread is blocked in MPI. False before MPI is initialized.
bool mpi_thread_multiple();

struct HostBackendOptions {
  // Most elements handed to one MPI call: MPI counts are int. Larger
  // messages are split into several calls or described with a derived
  // datatype, so sizes up to 8G bytes and beyond work. Tests lower it to
  // run those paths on small buffers.
  std::size_t max_count_per_call = INT_MAX;
};

// A backend on the MPI bootstrap's communicator (duplicated, so bootstrap
// messages never mix with timed data); `bootstrap` must come from
// make_mpi_bootstrap, or std::runtime_error says which bootstrap it was.
//
// NCCL's semantics on host memory (64-byte aligned malloc; copy_in/copy_out
// are memcpy; one local rank per process; wait() is a no-op as every call
// blocks). int8, int32, float and double reduce with MPI's own operations;
// half, bfloat16, f8e4m3 and f8e5m2 travel as 16- or 8-bit integers with
// user-defined MPI operations (host_reduce_elements). avg is a sum scaled by
// 1/n afterwards (integers: truncated toward zero, as NCCL). fp8 avg, which
// NCCL refuses, runs here too: the host backend measures hosts, not NCCL.
// split(color < 0) takes no part and returns nullptr (NCCL_SPLIT_NOCOLOR).
// abort() calls MPI_Abort: safe from another thread only when
// mpi_thread_multiple() (Open MPI's abort goes through its runtime and works
// in practice either way). MPI errors become std::runtime_error naming the call.
std::unique_ptr<Backend> make_host_backend(Bootstrap& bootstrap, const HostBackendOptions& options = {});

// The element-wise reduction the host backend's user-defined MPI operations
// apply: inout[i] = in[i] op inout[i], computed in double and stored with
// round-to-nearest-even (avg adds, like sum: the scaling comes afterwards).
// A NaN operand gives NaN for max and min too, so a NaN never hides.
void host_reduce_elements(const void* in, void* inout, std::size_t count, DataType type, ReduceOp op);

}  // namespace redline
