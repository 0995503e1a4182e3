// The MPI bootstrap's class, for the host backend, which needs its
// communicator. Only the collectives_mpi library includes this header (it
// includes mpi.h); everything else uses collectives/backends/host_backend.hpp.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "collectives/bootstrap/bootstrap.hpp"
#include "collectives/backends/host_backend.hpp"

namespace redline {

class MpiBootstrap final : public Bootstrap {
 public:
  MpiBootstrap(int* argc, char*** argv);
  ~MpiBootstrap() override;  // MPI_Finalize, unless aborted or MPI was initialized by someone else
  MpiBootstrap(const MpiBootstrap&) = delete;
  MpiBootstrap& operator=(const MpiBootstrap&) = delete;

  std::string kind() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  std::vector<char> all_gather(const void* mine, std::size_t bytes) override;
  void broadcast(void* data, std::size_t bytes, int root) override;
  void barrier() override;
  void idle_barrier() override;  // MPI_Ibarrier, tested every 5 ms
  [[noreturn]] void abort_all(int exit_code) override;
  std::string mpi_library() const override;

  // The bootstrap's own duplicate of MPI_COMM_WORLD (errors return).
  MPI_Comm comm() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owns_mpi_ = false;  // we called MPI_Init_thread, so we finalize
  bool aborted_ = false;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
};

// Throws std::runtime_error("<call> failed: <MPI_Error_string>") unless rc is MPI_SUCCESS.
void check_mpi(int rc, const char* call);

// Whether MPI is initialized and not yet finalized (MPI objects may be freed).
bool mpi_alive();

}  // namespace redline
