// allreduce_bench's choice of bootstrap (--bootstrap auto|mpi|env|single)
// from how the process was launched.
#pragma once

#include <memory>
#include <string>

#include "collectives/bootstrap/bootstrap.hpp"

namespace redline {

// MPI when an MPI launcher (or srun) started us, the TCP rendezvous for
// torchrun-style variables, else a single process. Never runs ranks alone.
// `backend` is the resolved backend, `backend_flag` what --backend said.
// Bad or contradictory launch settings are a UsageError.
std::unique_ptr<Bootstrap> make_bootstrap(const std::string& choice, const std::string& backend,
                                          const std::string& backend_flag, int* argc, char*** argv);

}  // namespace redline
