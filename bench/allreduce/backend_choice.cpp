#include "bench/allreduce/backend_choice.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "harness/core/usage_error.hpp"
#ifdef REDLINE_HAVE_MPI
#include "collectives/backends/host_backend.hpp"
#endif
#ifdef REDLINE_HAVE_NCCL_BACKEND
#include "collectives/backends/nccl_backend.hpp"
#include "kernels/device_query.cuh"
#include "kernels/gpu_availability.cuh"
#endif

namespace redline::allreduce {
namespace {

// Creates no CUDA context: the NCCL backend probes the GPU each rank will use.
bool gpu_visible() {
#ifdef REDLINE_HAVE_NCCL_BACKEND
  return visible_gpu_count() > 0;
#else
  return false;
#endif
}

}  // namespace

int visible_gpus() {
#ifdef REDLINE_HAVE_NCCL_BACKEND
  return visible_gpu_count();
#else
  return 0;
#endif
}

// --backend auto: nccl when a GPU is visible, else host.
std::string resolve_backend(const std::string& choice) {
  if (choice == "auto") return gpu_visible() ? "nccl" : "host";
  if (choice != "nccl" && choice != "host") throw UsageError("--backend", choice, "use auto, nccl or host");
  return choice;
}

// --backend auto is decided per rank; a node whose GPUs are gone (a dead
// driver) would pick host while the others pick nccl and make different
// calls. Every rank checks that all agree, and the run stops naming the odd ones.
void agree_on_backend(Bootstrap& bootstrap, const std::string& kind) {
  char mine[64] = {};
  std::snprintf(mine, sizeof mine, "%s", kind.c_str());
  const std::vector<char> all = bootstrap.all_gather(mine, sizeof mine);
  std::string odd;
  for (int r = 0; r < bootstrap.size(); ++r)
    if (kind != std::string(all.data() + static_cast<std::size_t>(r) * sizeof mine))
      odd += (odd.empty() ? "" : ", ") + std::to_string(r) + " (" + std::string(all.data() + r * sizeof mine) + ")";
  if (!odd.empty())
    throw UsageError("--backend", "auto",
                     "ranks disagree: this rank (" + std::to_string(bootstrap.rank()) + ") chose " + kind +
                         " but ranks " + odd + " did not; a node without a usable GPU? pick --backend explicitly");
}

std::unique_ptr<Backend> make_backend(const std::string& kind, Bootstrap& bootstrap, int gpus, bool blocking,
                                      Environment& env) {
  if (kind == "nccl") {
#ifdef REDLINE_HAVE_NCCL_BACKEND
    // NCCL_COMM_BLOCKING overrides the blocking config the backend asks for,
    // and a non-blocking communicator lets wait() find idle streams before
    // the operations are enqueued: the run forces blocking and says so.
    if (const char* value = std::getenv("NCCL_COMM_BLOCKING"); value != nullptr && std::string(value) != "1") {
      if (bootstrap.rank() == 0)
        std::cerr << "allreduce_bench: NCCL_COMM_BLOCKING=" << value
                  << " set to 1: the timing needs blocking communicators (as nccl-tests creates)\n";
      env.variables["NCCL_COMM_BLOCKING"] = std::string("1 (was ") + value + ")";
      ::setenv("NCCL_COMM_BLOCKING", "1", 1);
    }
    try {
      auto backend = make_nccl_backend(bootstrap, gpus, blocking);
      add_cuda_gpu_info(env);
      env.nccl_version = nccl_version_string();
      return backend;
    } catch (const NoUsableGpuError& e) {
      throw CannotRun(std::string("--backend nccl: ") + e.what());
    } catch (const GpuMappingError& e) {
      throw UsageError(e.what());  // a launch mistake: too many ranks for the GPUs
    }
#else
    (void)bootstrap;
    (void)gpus;
    (void)blocking;
    (void)env;
    throw CannotRun("--backend nccl: this build has no CUDA and NCCL");
#endif
  }
  {
    if (gpus != 1) throw UsageError("-g", std::to_string(gpus), "--backend host drives no GPUs; use -g 1");
#ifdef REDLINE_HAVE_MPI
    if (bootstrap.kind() != "mpi")
      throw UsageError("--backend", kind,
                       "the host backend runs MPI collectives and needs the MPI bootstrap (mpirun or srun)");
    return make_host_backend(bootstrap);
#else
    throw CannotRun("--backend host: this build has no MPI (and there is no usable GPU for nccl)");
#endif
  }
}

}  // namespace redline::allreduce
