// The bootstrap for mpirun and srun: MPI finds the ranks. It refuses to run
// when the launcher started several ranks but this binary's MPI sees only
// itself, the classic sign of a binary built against another MPI.
#include "collectives/bootstrap/mpi_bootstrap.hpp"

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace redline {
namespace {

std::atomic<int> g_thread_level{-1};  // what MPI_Init_thread provided; -1 before

std::string library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string version(text, static_cast<std::size_t>(len > 0 ? len : 0));
  version = version.substr(0, version.find_first_of("\n,"));
  while (!version.empty() && (version.back() == '\0' || version.back() == ' ')) version.pop_back();
  return version.empty() ? "unknown MPI" : version;
}

std::string alone_message(const LaunchInfo& launch) {
  std::string message = "launched by " + launch.launcher + " with world size " + std::to_string(launch.world_size) +
                        " (this is rank " + std::to_string(launch.rank) +
                        "), but MPI_COMM_WORLD has 1 rank: every rank would run alone. ";
  if (launch.launcher == "torchrun-style env") {
    message += "A torchrun-style launch has no MPI: use the env bootstrap.";
  } else {
    message += "This binary's MPI (" + library_version() +
               ") is probably not the one the launcher serves: rebuild redline against the launcher's MPI, "
               "use the mpirun that comes with this MPI";
    if (launch.launcher == "srun") message += ", or pick srun's matching plugin (srun --mpi=list; e.g. --mpi=pmix)";
    message += ".";
  }
  return message;
}

}  // namespace

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  const std::string what = len > 0 ? std::string(text, static_cast<std::size_t>(len)) : "error " + std::to_string(rc);
  throw std::runtime_error(std::string(call) + " failed: " + what);
}

bool mpi_alive() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

bool mpi_thread_multiple() {
  int level = g_thread_level.load();
  if (level < 0 && mpi_alive()) MPI_Query_thread(&level);
  return level == MPI_THREAD_MULTIPLE;
}

MpiBootstrap::MpiBootstrap(int* argc, char*** argv) {
  // Before MPI_Init: a malformed launcher variable is reported as such.
  const LaunchInfo launch = detect_launch();
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    owns_mpi_ = true;
  } else {
    MPI_Query_thread(&provided);
  }
  g_thread_level = provided;
  try {
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    if (launch.world_size > 1 && size_ == 1) throw std::runtime_error(alone_message(launch));
    MPI_Comm local = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
              "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
  } catch (...) {
    // A lone rank can finalize safely; with others around, MPI_Finalize may
    // wait for them, so the process ends unfinalized and the launcher says so.
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    if (owns_mpi_ && size_ == 1) MPI_Finalize();
    throw;
  }
}

MpiBootstrap::~MpiBootstrap() {
  if (aborted_ || !mpi_alive()) return;
  MPI_Comm_free(&comm_);
  if (owns_mpi_) MPI_Finalize();
}

std::vector<char> MpiBootstrap::all_gather(const void* mine, std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error("bootstrap all_gather of " + std::to_string(bytes) + " bytes: more than MPI's int count");
  std::vector<char> all(bytes * static_cast<std::size_t>(size_));
  const int count = static_cast<int>(bytes);
  check_mpi(MPI_Allgather(mine, count, MPI_BYTE, all.data(), count, MPI_BYTE, comm_), "MPI_Allgather (bootstrap)");
  return all;
}

void MpiBootstrap::broadcast(void* data, std::size_t bytes, int root) {
  if (root < 0 || root >= size_)
    throw std::runtime_error("broadcast root " + std::to_string(root) + " is out of range for world size " +
                             std::to_string(size_));
  if (bytes > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error("bootstrap broadcast of " + std::to_string(bytes) + " bytes: more than MPI's int count");
  check_mpi(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm_), "MPI_Bcast (bootstrap)");
}

void MpiBootstrap::barrier() { check_mpi(MPI_Barrier(comm_), "MPI_Barrier (bootstrap)"); }

void MpiBootstrap::idle_barrier() {
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(comm_, &request), "MPI_Ibarrier (bootstrap)");
  for (int done = 0;;) {
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test (bootstrap)");
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string MpiBootstrap::mpi_library() const { return library_version(); }

void MpiBootstrap::abort_all(int exit_code) {
  aborted_ = true;
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

std::unique_ptr<Bootstrap> make_mpi_bootstrap(int* argc, char*** argv) {
  return std::make_unique<MpiBootstrap>(argc, argv);
}

}  // namespace redline
