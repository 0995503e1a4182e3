#include "bench/allreduce/bootstrap.hpp"

#include <cstdlib>
#include <stdexcept>

#include "collectives/bootstrap/env_bootstrap.hpp"
#include "collectives/bootstrap/single_bootstrap.hpp"
#include "harness/core/usage_error.hpp"
#ifdef REDLINE_HAVE_MPI
#include "collectives/backends/host_backend.hpp"
#endif

namespace redline {

std::unique_ptr<Bootstrap> make_bootstrap(const std::string& choice, const std::string& backend,
                                          const std::string& backend_flag, int* argc, char*** argv) {
  LaunchInfo launch;
  try {
    launch = detect_launch();
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());  // a malformed launcher variable is bad input
  }
  const bool env_launch = launch.launcher == "torchrun-style env";
  if (env_launch && backend == "host" && (choice == "auto" || choice == "env"))
    throw UsageError("--backend", backend_flag,
                     std::string(backend_flag == "auto" ? "picked host (no GPU is visible); " : "") +
                         "the host backend runs MPI collectives: launch with mpirun or srun, not torchrun-style "
                         "variables");
  std::string kind = choice;
  if (kind == "auto") {
    if (launch.world_size > 1 && !env_launch) kind = "mpi";
    else if (env_launch) kind = "env";
    else kind = backend == "host" ? "mpi" : "single";
  }
  if (kind == "mpi") {
#ifdef REDLINE_HAVE_MPI
    return make_mpi_bootstrap(argc, argv);
#else
    (void)argc;
    (void)argv;
    throw UsageError("--bootstrap", choice,
                     "launched by " + launch.launcher + " with " + std::to_string(launch.world_size) +
                         " ranks, but this allreduce_bench was built without MPI; rebuild with MPI (libopenmpi-dev) "
                         "or launch torchrun-style (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)");
#endif
  }
  // The variables, not the launcher's label: srun may start a torchrun-style job.
  if (kind == "env" && std::getenv("RANK") == nullptr && std::getenv("WORLD_SIZE") == nullptr)
    throw UsageError("--bootstrap", choice,
                     "needs the torchrun-style variables RANK and WORLD_SIZE (and LOCAL_RANK, MASTER_ADDR and "
                     "MASTER_PORT), and neither is set");
  if (kind == "env") return make_env_bootstrap();
  if (kind == "single") {
    if (launch.world_size > 1)
      throw UsageError("--bootstrap", choice,
                       "launched by " + launch.launcher + " with " + std::to_string(launch.world_size) +
                           " ranks: a single-process bootstrap would run every rank alone");
    return make_single_bootstrap();
  }
  throw UsageError("--bootstrap", choice, "use auto, mpi, env or single");
}

}  // namespace redline
