// Which backend the ranks run (--backend auto: nccl where a GPU is visible,
// else host), that every rank chose the same, and the backend itself.
#pragma once

#include <memory>
#include <string>

#include "collectives/backends/backend.hpp"
#include "collectives/bootstrap/bootstrap.hpp"
#include "harness/core/environment.hpp"

namespace redline::allreduce {

// GPUs this process sees (0 in a build without NCCL); creates no CUDA context.
int visible_gpus();

// auto -> nccl or host; UsageError for anything else.
std::string resolve_backend(const std::string& choice);

// --backend auto is decided per rank; a node whose GPUs are gone (a dead
// driver) would pick host while the others pick nccl and make different
// calls. Every rank checks that all agree (UsageError naming the odd ones).
void agree_on_backend(Bootstrap& bootstrap, const std::string& kind);

// NCCL over `gpus` GPUs of this process, or MPI on host memory; CannotRun
// where this build or machine has neither, UsageError for a launch mistake.
std::unique_ptr<Backend> make_backend(const std::string& kind, Bootstrap& bootstrap, int gpus, bool blocking,
                                      Environment& env);

}  // namespace redline::allreduce
