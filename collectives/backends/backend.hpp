// The transport a collective runs on: NCCL on GPU memory, or MPI on host
// memory. Operations have NCCL's semantics (counts in elements, in-place when
// the pointers alias as NCCL defines it). A process may drive several local
// ranks (GPUs, nccl-tests' -g): every call names the local rank, and calls
// for all local ranks of one operation sit between group_begin/group_end (a
// process with one local rank calls without a group, as nccl-tests does).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "collectives/ops/data_type.hpp"

namespace redline {

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;  // "nccl", "host"
  virtual int size() const = 0;          // ranks in the communicator
  virtual int local_ranks() const = 0;   // ranks this process drives (1 unless -g N)
  virtual int rank(int local) const = 0; // global rank of local rank `local`
  // Why `type` with `op` cannot be used (empty when it can), e.g. "fp8 needs
  // NCCL 2.24+ on sm_90 or newer". Collectives without an op ask with sum.
  virtual std::string unsupported_reason(DataType type, ReduceOp op) const = 0;
  bool supports(DataType type, ReduceOp op) const { return unsupported_reason(type, op).empty(); }

  // Memory the operations run on (device memory for nccl, host for host).
  virtual void* allocate(int local, std::size_t bytes) = 0;
  virtual void release(int local, void* ptr) = 0;
  virtual void copy_in(int local, void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void copy_out(int local, void* host_dst, const void* src, std::size_t bytes) = 0;
  // Whether allocate() returns memory this process reads and writes directly
  // (host). Inputs are then written, and results read, in the buffers
  // themselves: copy_in and copy_out with the same pointer on both sides do
  // nothing, and no staging buffer as large as the largest point is held
  // beside the two that the peer, a plain MPI loop, holds.
  virtual bool host_addressable() const { return false; }

  // Whether timed operations rotate through the buffers (see point_runner):
  // each backend is measured the way its peer measures. nccl-tests rotates
  // GPU buffers so small sizes miss the L2; the host backend's peer, a plain
  // MPI_Allreduce loop, reuses one buffer.
  virtual bool rotates_buffers() const { return false; }

  virtual void group_begin() {}
  virtual void group_end() {}
  virtual void all_reduce(int local, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) = 0;
  virtual void all_gather(int local, const void* send, void* recv, std::size_t send_count, DataType type) = 0;
  virtual void reduce_scatter(int local, const void* send, void* recv, std::size_t recv_count, DataType type,
                              ReduceOp op) = 0;
  virtual void broadcast(int local, const void* send, void* recv, std::size_t count, DataType type, int root) = 0;
  virtual void reduce(int local, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                      int root) = 0;
  virtual void all_to_all(int local, const void* send, void* recv, std::size_t count_per_peer, DataType type) = 0;
  // Sends `count` elements to `peer_to` and receives as many from `peer_from`.
  virtual void send_recv(int local, const void* send, void* recv, std::size_t count, DataType type, int peer_to,
                         int peer_from) = 0;

  // CUDA graphs (nccl-tests' -G): operations issued between capture_begin
  // and capture_end are recorded, not run; replay_capture runs the recording
  // once. Only backends that return true from supports_capture do this.
  virtual bool supports_capture() const { return false; }
  virtual void capture_begin() {}
  virtual void capture_end() {}
  virtual void replay_capture() {}

  // A communicator of the ranks that pass the same `color`, ordered by `key`
  // (ncclCommSplit, MPI_Comm_split). Every rank must call it.
  virtual std::unique_ptr<Backend> split(int color, int key) = 0;

  // Returns once every issued operation has completed (stream synchronize;
  // a no-op for blocking MPI calls).
  virtual void wait() = 0;
  // Called from the watchdog thread when an operation never completes:
  // ncclCommAbort or MPI_Abort. Must be safe to call while another thread is
  // blocked inside an operation.
  virtual void abort() = 0;
};

}  // namespace redline
