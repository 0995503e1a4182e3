// Which launcher started this process, read from the variables each launcher
// sets, so a binary that cannot join its launcher's world says so instead of
// running its ranks alone.
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "collectives/bootstrap/bootstrap.hpp"

namespace redline {

// nullopt when unset; a number that is not a plain non-negative decimal int
// is an error that names the variable, as a launcher would never set it.
std::optional<int> parse_launch_int(const char* name, const char* raw) {
  if (!raw) return std::nullopt;
  const std::string value(raw);
  long long parsed = 0;
  bool ok = !value.empty() && value.size() <= 10;
  for (const char c : value) {
    if (c < '0' || c > '9') {
      ok = false;
      break;
    }
    parsed = parsed * 10 + (c - '0');
  }
  if (!ok || parsed > 2147483647LL)
    throw std::runtime_error(std::string(name) + "='" + value + "' is not a non-negative integer");
  return static_cast<int>(parsed);
}

namespace {

std::optional<int> read_int(const char* name) { return parse_launch_int(name, std::getenv(name)); }

// One launcher's three variables. Size and rank go together: one without the
// other means a broken or half-copied environment, never a guess.
LaunchInfo from_vars(const char* launcher, const char* size_var, const char* rank_var,
                     const char* local_rank_var, const char* fallback_local_rank_var = nullptr) {
  LaunchInfo info;
  info.launcher = launcher;
  const auto size = read_int(size_var);
  const auto rank = read_int(rank_var);
  if (!size) throw std::runtime_error(std::string(rank_var) + " is set but " + size_var + " is not");
  if (!rank) throw std::runtime_error(std::string(size_var) + " is set but " + rank_var + " is not");
  if (*size < 1)
    throw std::runtime_error(std::string(size_var) + "='" + std::to_string(*size) + "' must be at least 1");
  if (*rank >= *size)
    throw std::runtime_error(std::string(rank_var) + "=" + std::to_string(*rank) + " is out of range for " + size_var +
                             "=" + std::to_string(*size));
  info.world_size = *size;
  info.rank = *rank;
  auto local = read_int(local_rank_var);
  if (!local && fallback_local_rank_var) local = read_int(fallback_local_rank_var);
  info.local_rank = local.value_or(0);
  return info;
}

bool is_set(const char* name) { return std::getenv(name) != nullptr; }

}  // namespace

// Most specific first. mpirun and mpiexec start their daemons with srun
// inside a Slurm allocation, so their ranks inherit SLURM_STEP_ID with
// SLURM_NTASKS counting daemons: their own variables must win. SLURM_NTASKS
// alone only says we are inside an allocation (sbatch, salloc), where one
// process is normal; SLURM_STEP_ID marks a task that srun started.
LaunchInfo detect_launch() {
  if (is_set("OMPI_COMM_WORLD_SIZE") || is_set("OMPI_COMM_WORLD_RANK"))
    return from_vars("mpirun (Open MPI)", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                     "OMPI_COMM_WORLD_LOCAL_RANK");
  if (is_set("PMI_SIZE") || is_set("PMI_RANK"))
    return from_vars("mpiexec (MPICH/PMI)", "PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID");
  if (is_set("SLURM_STEP_ID") && (is_set("SLURM_NTASKS") || is_set("SLURM_PROCID")))
    return from_vars("srun", "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID");
  if (is_set("PMIX_RANK")) {
    // PMIx publishes no world size in the environment: rank + 1 is a lower
    // bound, enough for every rank but 0 to notice that it runs alone.
    LaunchInfo info;
    info.launcher = "PMIx launcher";
    info.rank = *read_int("PMIX_RANK");
    info.world_size = info.rank < 2147483647 ? info.rank + 1 : info.rank;
    return info;
  }
  if (is_set("WORLD_SIZE") || is_set("RANK"))
    return from_vars("torchrun-style env", "WORLD_SIZE", "RANK", "LOCAL_RANK");
  LaunchInfo info;
  info.launcher = "none";
  return info;
}

}  // namespace redline
